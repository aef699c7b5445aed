// Must not compile with the HTTP front end's include path (ctest layering.include_fence):
// the first include is the service's interface, which a front end may use; the second is
// a store's header, which the fence (cmake/include_fence.cmake) turns into an #error.
#include "server/service/id_service.h"
#include "store/store_guard.h"

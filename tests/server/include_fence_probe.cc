// Must not compile with the HTTP front end's include path (ctest layering.include_fence):
// the first includes are the service's interface and the backends' plain status views,
// which a front end may use; the last is a store's header, which the fence
// (cmake/include_fence.cmake) turns into an #error.
#include "coord/lease_status.h"
#include "server/service/id_service.h"
#include "store/guard_status.h"
#include "store/store_guard.h"

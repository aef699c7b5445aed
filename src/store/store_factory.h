// Opens a SegmentStore from its URL: the one place that picks the backend.
//
//   sqlite:PATH                      an SQLite file (created if missing, WAL mode)
//   postgres://USER@HOST:PORT/DB     PostgreSQL (also postgresql://; libpq keywords ok)
//   redis://HOST:PORT[/DB]           Redis
#pragma once

#include <memory>
#include <string_view>

#include "idforge/segment_store.h"

namespace idforge::store {

Result<std::unique_ptr<SegmentStore>> open_store(std::string_view url);

}  // namespace idforge::store

// Opens a SegmentStore from its URL: the one place that picks the backend.
//
//   sqlite:PATH                      an SQLite file (created if missing, WAL mode)
//   postgres://USER@HOST:PORT/DB     PostgreSQL (also postgresql://; libpq keywords ok)
//   mysql://USER@HOST:PORT/DB        MySQL or MariaDB (also mariadb://; ?table=leaf_alloc,
//                                    tiny_id_info or SEQUENCE uses that table in place)
//   redis://HOST:PORT[/DB]           Redis
#pragma once

#include <memory>
#include <string_view>

#include "idforge/segment_store.h"

namespace idforge::store {

Result<std::unique_ptr<SegmentStore>> open_store(std::string_view url);

}  // namespace idforge::store

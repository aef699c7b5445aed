// The URL of a MySQL or MariaDB segment store (docs/stores.md, "MySQL and MariaDB"):
//
//   mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE[?OPTION=VALUE&...]   (also mariadb://)
//
// USER and PASSWORD may be percent-encoded; HOST may be an IPv6 address in brackets.
// Options: table, scheme, step, connect_timeout, read_timeout, write_timeout,
// lock_wait_timeout (seconds), pool, retries, tls, tls_ca, tls_cert, tls_key. Anything
// else is refused with the list of options, so a typo never passes unnoticed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "idforge/status.h"

namespace idforge::store {

// Which table layout, and so which range convention, the store uses.
enum class MysqlScheme {
  kIdforge,   // idforge_segments: (max_id - step, max_id], created if missing
  kLeaf,      // Leaf's leaf_alloc: [max_id - step, max_id), Leaf's statements
  kTinyid,    // Tinyid's tiny_id_info: (old, new] with x % delta == remainder, versioned
  kSequence,  // the classic SEQUENCE(table_name, next_id): [next_id, next_id + step)
};
std::string_view mysql_scheme_name(MysqlScheme scheme);

// TLS to the server: off; on (encrypted, the certificate not checked: like the
// client's --ssl); verify (encrypted, and the certificate must be signed by tls_ca and
// name the host).
enum class MysqlTls { kOff, kOn, kVerify };

struct MysqlUrl {
  std::string user;
  std::string password;
  std::string host;
  unsigned port = 3306;
  std::string database;
  std::string table = "idforge_segments";
  MysqlScheme scheme = MysqlScheme::kIdforge;
  unsigned connect_timeout_s = 3;
  unsigned read_timeout_s = 6;  // also bounds a statement waiting on a row lock
  unsigned write_timeout_s = 6;
  unsigned lock_wait_timeout_s = 4;  // innodb_lock_wait_timeout, below read_timeout_s
  unsigned pool = 4;                 // connections per store
  unsigned retries = 10;             // tinyid: optimistic updates tried before Unavailable
  uint32_t step = 1000;              // sequence: numbers per range (the table has no step)
  MysqlTls tls = MysqlTls::kOff;
  std::string tls_ca, tls_cert, tls_key;
  // The URL as errors and logs show it: everything but the password.
  std::string shown;
};

// Parses and checks a store URL; InvalidArgument says what is wrong, without the
// password.
Result<MysqlUrl> parse_mysql_url(std::string_view url);

}  // namespace idforge::store

# shellcheck shell=bash
# MariaDB for scripts/test-services: one durable server with a binary log. Sourced by
# the script; uses its common helpers.

# ---- MariaDB -----------------------------------------------------------------------

kMariadbSocketMax=107 # a Unix socket path holds at most 107 bytes (sun_path, then NUL)

# The server and its tools: MariaDB's names first, MySQL's old names as a fallback.
mariadb_prog() {
  local name
  for name in "$@"; do
    if command -v "$name" >/dev/null 2>&1; then
      command -v "$name"
      return
    fi
    if [ -x "/usr/sbin/$name" ]; then
      echo "/usr/sbin/$name"
      return
    fi
  done
  die "$1 not found (install mariadb-server)"
}

# The account that administers the server over its Unix socket, with no password: the
# unix_socket plugin lets in a user of the same name as the OS user connecting, and
# mariadb-install-db makes one for us.
mariadb_admin_user() { id -un; }

# Runs SQL as that account over the socket.
mariadb_admin_sql() {
  local dir=$1
  shift
  "$(mariadb_prog mariadb mysql)" --no-defaults --socket="$(cat "$dir/socket")" \
    -u "$(mariadb_admin_user)" --connect-timeout=5 -N -B "$@" </dev/null
}

# The server's my.cnf: all of its settings, with `port` (0 for mariadb-install-db,
# which has no networking). The server reads this file alone (--defaults-file), not
# /etc/mysql, so a Debian system server's settings never leak in.
mariadb_config() {
  local dir=$1 port=$2 flush=1 sync=1
  # Durable by default: every commit is flushed to the InnoDB redo log and to the
  # binary log before it is acknowledged. The store checks these two settings, and a
  # test of its refusal needs a server without them (--unsafe-durability, an
  # unsafe_durability file).
  if [ -f "$dir/unsafe_durability" ]; then
    flush=2
    sync=0
  fi
  {
    echo "# idforge test server: loopback TCP, plus a Unix socket for the admin account"
    echo "[mysqld]"
    # As root the server runs as root too: MariaDB allows it when asked (PostgreSQL
    # does not), and DIR then needs no other owner. As anyone else it runs as them.
    if [ "$(id -u)" -eq 0 ]; then echo "user = root"; fi
    echo "bind-address = 127.0.0.1"
    echo "port = $port"
    echo "socket = $(cat "$dir/socket")"
    echo "datadir = $dir/data"
    # Its own temporary files: in the shared /tmp, the bootstrap's temporary tables of two
    # servers started at once went missing (parallel tests in make test).
    echo "tmpdir = $dir/tmp"
    echo "pid-file = $dir/mariadb.pid"
    echo "log-error = $dir/mariadb.log"
    echo "skip-name-resolve"
    echo "max_connections = 200"
    # Small: a test server's data fits, and it starts and stops in a second or two.
    echo "innodb_buffer_pool_size = 32M"
    echo "innodb_log_file_size = 16M"
    echo "performance_schema = OFF"
    # InnoDB's own I/O threads, not io_uring or libaio: those take locked memory and
    # kernel queues that servers started at once (parallel tests) can run out of.
    echo "innodb_use_native_aio = 0"
    # Debian's own server config says the same; without it the default is latin1.
    echo "character-set-server = utf8mb4"
    echo "collation-server = utf8mb4_general_ci"
    echo "innodb_flush_log_at_trx_commit = $flush"
    echo "sync_binlog = $sync"
    # The binary log is on, so the server has a GTID position (the store reads it).
    # server_id is the port: unique among the servers running at once, and a
    # restart keeps both.
    echo "log-bin = $dir/binlog/mariadb-bin"
    echo "server_id = $port"
    echo "binlog_format = ROW"
    echo "gtid_strict_mode = ON"
    # --tls: the certificate from mariadb_make_tls, and TCP clients must use TLS (the
    # admin account's Unix socket counts as secure, so it still gets in).
    if [ -f "$dir/tls/server-cert.pem" ]; then
      echo "ssl_ca = $dir/tls/ca.pem"
      echo "ssl_cert = $dir/tls/server-cert.pem"
      echo "ssl_key = $dir/tls/server-key.pem"
      echo "require_secure_transport = ON"
    fi
  } >"$dir/my.cnf"
}

# A throwaway CA and a server certificate signed by it, in DIR/tls (--tls): the CA's
# certificate is DIR/tls/ca.pem, for clients that verify the server. The certificate
# names 127.0.0.1 and localhost and is valid for a few days; the keys exist only in DIR.
mariadb_make_tls() {
  local tls=$1/tls
  mkdir -p "$tls"
  chmod 0700 "$tls"
  openssl req -x509 -newkey rsa:2048 -nodes -days 7 -subj "/CN=idforge test CA" \
    -keyout "$tls/ca-key.pem" -out "$tls/ca.pem" >"$tls/openssl.log" 2>&1 ||
    die "making the test CA failed; see $tls/openssl.log"
  openssl req -new -newkey rsa:2048 -nodes -subj "/CN=localhost" \
    -keyout "$tls/server-key.pem" -out "$tls/server.csr" >>"$tls/openssl.log" 2>&1 ||
    die "making the server key failed; see $tls/openssl.log"
  printf 'subjectAltName = IP:127.0.0.1, DNS:localhost\nextendedKeyUsage = serverAuth\n' \
    >"$tls/server.ext"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca-key.pem" \
    -CAcreateserial -days 3 -extfile "$tls/server.ext" -out "$tls/server-cert.pem" \
    >>"$tls/openssl.log" 2>&1 || die "signing the server certificate failed; see $tls/openssl.log"
}

# Runs mariadb-install-db into DIR/data with DIR/my.cnf.
mariadb_install_db() {
  local dir=$1
  # --auth-root-authentication-method=socket with our own name: root@localhost and
  # `id -un`@localhost get in over the socket without a password (unix_socket), and
  # no account has an empty password on TCP. --debug-no-sync skips the bootstrap's
  # own flushes (hundreds of them: 3 s of a 4 s start on a busy disk), as initdb
  # --no-sync does; the server itself never gets it.
  "$(mariadb_prog mariadb-install-db mysql_install_db)" --defaults-file="$dir/my.cnf" \
    --datadir="$dir/data" --auth-root-authentication-method=socket \
    --auth-root-socket-user="$(mariadb_admin_user)" --skip-test-db --skip-name-resolve \
    --debug-no-sync </dev/null >"$dir/install-db.log" 2>&1 || {
    # The logs go to stderr too: on a CI machine the directory is gone afterwards.
    tail -n 20 "$dir/install-db.log" "$dir/mariadb.log" >&2 2>/dev/null
    die "mariadb-install-db failed; see $dir/install-db.log and $dir/mariadb.log"
  }
}

# A freshly installed data directory, made once per MariaDB version, user and these
# install settings, and copied for each server: the bootstrap takes seconds (some 50
# test processes start a server), the copy of its 34 MB a fraction of one. The system
# tables hold no path, port or server id, so a copy is a server of its own. Kept in
# ${TMPDIR:-/tmp}/idforge-mariadb-template-*; made under an flock, so tests started
# at once make it once; removing it only costs the next start a bootstrap.
kMariadbTemplateVersion=1 # raise when mariadb_install_db or mariadb_config's InnoDB part changes
mariadb_template() {
  local key base
  key=$( (
    echo "$kMariadbTemplateVersion $(id -un)"
    "$(mariadb_prog mariadbd mysqld)" --version
  ) | sha256sum | cut -c1-16)
  base="${TMPDIR:-/tmp}/idforge-mariadb-template-$(id -u)-$key"
  (
    flock 9
    if [ ! -d "$base/data" ]; then
      local work
      work=$(mktemp -d "$base.XXXXXX")
      mktemp -u /tmp/idforge-mariadb-XXXXXXXXXX.sock >"$work/socket"
      mkdir -p "$work/data" "$work/tmp"
      chmod 0700 "$work/data"
      mariadb_config "$work" 0
      mariadb_install_db "$work"
      mv "$work/data" "$work/ready" && mkdir -p "$base" && mv "$work/ready" "$base/data"
      rm -rf "$work"
    fi
  ) 9>"$base.lock"
  echo "$base/data"
}

mariadb_init() {
  local dir=$1 socket="$1/mariadb.sock" template
  # A long DIR makes a socket path the kernel refuses: such a server has its socket
  # in /tmp under a name of its own, which `stop` removes.
  if [ ${#socket} -gt $kMariadbSocketMax ]; then
    socket=$(mktemp -u /tmp/idforge-mariadb-XXXXXXXXXX.sock)
  fi
  echo "$socket" >"$dir/socket"
  mkdir -p "$dir/binlog" "$dir/tmp"
  mariadb_config "$dir" 0
  template=$(mariadb_template)
  cp -a "$template" "$dir/data"
  chmod 0700 "$dir/data"
}

mariadb_start_once() {
  local dir=$1 port=$2 pid i
  mariadb_config "$dir" "$port"
  # setsid + closed stdio, as for etcd. The server writes its own pid to the same
  # file, and removes it on a clean shutdown.
  setsid "$(mariadb_prog mariadbd mysqld)" --defaults-file="$dir/my.cnf" \
    </dev/null >>"$dir/mariadb.log" 2>&1 &
  pid=$!
  echo "$pid" >"$dir/mariadb.pid"
  for i in $(seq 1 $((kReadySeconds * 10))); do
    alive "$pid" || return 1 # the port was taken (or see mariadb.log)
    # Listening comes after InnoDB's start and crash recovery; the admin account's
    # query then proves that the server answers.
    if listens_as "$port" "$pid" && mariadb_admin_sql "$dir" -e "SELECT 1" >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.1
  done
  return 1
}

# The database, the read-write user idforge and the read-only user idforge_ro, for
# both TCP from 127.0.0.1 and the socket (localhost). BINLOG MONITOR (REPLICATION
# CLIENT's name since 10.5) allows SHOW MASTER STATUS; the durability settings and
# @@gtid_binlog_pos / @@gtid_current_pos need no privilege.
mariadb_create_db() {
  local dir=$1 host sql="CREATE DATABASE idforge;"
  for host in 127.0.0.1 localhost; do
    sql+="CREATE USER 'idforge'@'$host' IDENTIFIED BY 'idforge';"
    sql+="GRANT ALL PRIVILEGES ON idforge.* TO 'idforge'@'$host';"
    sql+="GRANT BINLOG MONITOR ON *.* TO 'idforge'@'$host';"
    sql+="CREATE USER 'idforge_ro'@'$host' IDENTIFIED BY 'idforge_ro';"
    sql+="GRANT SELECT ON idforge.* TO 'idforge_ro'@'$host';"
  done
  mariadb_admin_sql "$dir" -e "$sql" >>"$dir/install-db.log" 2>&1 ||
    die "creating database idforge and its users failed; see $dir/install-db.log"
}

mariadb_stop() {
  local dir=$1 socket
  # SIGTERM is MariaDB's clean shutdown (as mariadb-admin shutdown), and also reaches a
  # paused server.
  pidfile_stop "$dir/mariadb.pid"
  # A socket of our own in /tmp: a clean shutdown removed it, a crash left it.
  socket=$(cat "$dir/socket" 2>/dev/null) || return 0
  case $socket in
  "$dir"/*) ;;
  *) rm -f "$socket" "$socket.lock" ;;
  esac
}

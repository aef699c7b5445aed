#include "cluster.h"

#include <fmt/format.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "support/faketime.h"
#include "support/ports.h"
#include "support/serve_launch.h"
#include "support/text.h"
#include "support/wire.h"

namespace idforge::torture {
namespace {

using test::trim;

using test_support::Connection;
using test_support::ExitInfo;
using test_support::HttpReply;
using test_support::parse_http_reply;
using test_support::ParseResult;
using test_support::RunResult;

// `"key":value` of a JSON object, as text (enough for the status's numbers and words).
std::string json_field(const std::string& body, const std::string& key) {
  const std::string k = "\"" + key + "\":";
  const size_t at = body.find(k);
  if (at == std::string::npos) return "?";
  size_t begin = at + k.size();
  if (begin < body.size() && body[begin] == '"') ++begin;
  const size_t end = body.find_first_of(",\"}", begin);
  return body.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

}  // namespace

std::string lease_summary(const ServerProc& server) {
  const HttpAnswer a = http_get(server.http_port.load(), "/v1/status", std::chrono::seconds(2));
  if (a.status != 200) return "no status";
  return fmt::format("slot {} ({}{})", json_field(a.body, "slot"), json_field(a.body, "state"),
                     json_field(a.body, "fenced") == "true" ? ", fenced" : "");
}

int64_t clock_rollbacks(const ServerProc& server) {
  const HttpAnswer a = http_get(server.http_port.load(), "/v1/status", std::chrono::seconds(2));
  if (a.status != 200) return -1;
  const std::string n = json_field(a.body, "rollbacks");
  return n == "?" ? -1 : std::atoll(n.c_str());
}

std::string clock_summary(const ServerProc& server) {
  const HttpAnswer a = http_get(server.http_port.load(), "/v1/status", std::chrono::seconds(2));
  if (a.status != 200) return "no status";
  return fmt::format(
      "last tick {} ms ahead of its clock, {} ms borrowed, {} ms waited, {} "
      "rollbacks seen",
      json_field(a.body, "offset_ms"), json_field(a.body, "borrowed_ms"),
      json_field(a.body, "waited_ms"), json_field(a.body, "rollbacks"));
}

GuardCounts guard_counts(const ServerProc& server) {
  GuardCounts c;
  const HttpAnswer a = http_get(server.http_port.load(), "/v1/status", std::chrono::seconds(2));
  const size_t guard = a.body.find("\"guard\":");
  if (a.status != 200 || guard == std::string::npos) return c;
  const std::string body = a.body.substr(guard);  // the first store's: each node has one
  const auto number = [&body](const char* key) {
    return std::atoll(json_field(body, key).c_str());
  };
  c.answered = true;
  c.identity = json_field(body, "identity");
  c.refused = number("refused_ranges");
  c.fleet_refused = number("fleet_refused_ranges");
  c.foreign = number("foreign_ranges");
  c.identity_changes = number("identity_changes");
  return c;
}

Status Service::start() {
  std::vector<std::string> argv = {script_, "start",   kind_,
                                   dir_,    "--owner", std::to_string(getpid())};
  argv.insert(argv.end(), start_args_.begin(), start_args_.end());
  const RunResult r = test_support::run_command(argv, dir_ + ".start", {.die_with_parent = true});
  url_ = trim(r.out);
  if (r.exit_code != 0 || url_.empty()) {
    return Status::Unavailable(fmt::format("test-services start {} failed (exit {}): {}", kind_,
                                           r.exit_code, trim(r.err)));
  }
  return Status::Ok();
}

Status Service::stop() {
  const RunResult r =
      test_support::run_command({script_, "stop", dir_}, dir_ + ".stop", {.die_with_parent = true});
  if (r.exit_code != 0) {
    return Status::IoError(fmt::format("test-services stop {}: {}", kind_, trim(r.err)));
  }
  return Status::Ok();
}

Status Service::command(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {script_, args.front(), dir_};
  argv.insert(argv.end(), args.begin() + 1, args.end());
  const RunResult r =
      test_support::run_command(argv, dir_ + "." + args.front(), {.die_with_parent = true});
  if (r.exit_code != 0) {
    return Status::IoError(
        fmt::format("test-services {} {}: {}", args.front(), kind_, trim(r.err)));
  }
  return Status::Ok();
}

Status Service::restart() {
  const RunResult r =
      test_support::run_command({script_, "restart", dir_, "--owner", std::to_string(getpid())},
                                dir_ + ".restart", {.die_with_parent = true});
  if (r.exit_code != 0 || trim(r.out) != url_) {
    return Status::IoError(fmt::format("test-services restart {}: {}", kind_, trim(r.err)));
  }
  return Status::Ok();
}

HttpAnswer http_get(int port, const std::string& target, std::chrono::milliseconds timeout) {
  HttpAnswer answer;
  const auto deadline = Clock::now() + timeout;
  Connection conn;
  std::string error;
  if (!conn.connect(port, deadline, &error)) return answer;
  const std::string request =
      "GET " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (!conn.send_all(request, deadline, &error)) return answer;
  HttpReply reply;
  while (true) {
    const ParseResult r = parse_http_reply(conn.buffer(), &reply);
    if (r == ParseResult::kDone) break;
    if (r == ParseResult::kBad || !conn.read_more(deadline, &error)) return answer;
  }
  answer.status = reply.status;
  answer.body = reply.body;
  return answer;
}

ServerProc::ServerProc(int index, ServerConfig config, std::string idforge, std::string work_dir)
    : index_(index),
      config_(std::move(config)),
      idforge_(std::move(idforge)),
      work_dir_(std::move(work_dir)) {
  serves_redis_tag = config_.redis_tag;
  err_path_ = work_dir_ + "/" + config_.name + ".err";
  offset_path_ = work_dir_ + "/" + config_.name + ".faketime";
}

bool ServerProc::set_offset(int64_t offset_ms) {
  offset_ms_ = offset_ms;
  return test_support::write_file_atomically(offset_path_,
                                             test_support::faketime_offset_text(offset_ms));
}

bool ServerProc::launch(const std::vector<std::string>& common_args, int64_t offset_ms) {
  if (http_port.load() == 0) {
    // Ports below the ephemeral range: kept across restarts (see cluster.h).
    http_port = test_support::port_below_ephemeral_range();
    int resp = test_support::port_below_ephemeral_range();
    while (resp == http_port.load()) resp = test_support::port_below_ephemeral_range();
    resp_port = resp;
  }
  if (!set_offset(offset_ms)) {
    last_failure_ = "cannot write " + offset_path_;
    return false;
  }
  const int number = incarnation.load() + 1;
  if (std::FILE* err = std::fopen(err_path_.c_str(), "a")) {
    std::fprintf(err, "=== torture: start #%d, clock offset %lld ms ===\n", number,
                 static_cast<long long>(offset_ms));
    std::fclose(err);
  }
  std::vector<std::string> args = {"--identity", config_.identity};
  args.insert(args.end(), common_args.begin(), common_args.end());
  args.insert(args.end(), config_.extra_args.begin(), config_.extra_args.end());
  const Status launched = child_.launch({
      .bin = idforge_,
      .http_port = http_port.load(),
      .resp_port = resp_port.load(),
      .data_dir = config_.data_dir,
      .args = args,
      .env = test_support::faketime_env(offset_path_),
      .out_path = fmt::format("{}/{}.{}.out", work_dir_, config_.name, number),
      .err_path = err_path_,
      .append_err = true,  // one file across restarts, with the marker lines above
      .die_with_parent = true,
  });
  if (!launched.ok()) {
    last_failure_ = launched.message();
    return false;
  }
  incarnation = number;
  return true;
}

StartOutcome ServerProc::await_start(std::chrono::milliseconds timeout) {
  const Result<test_support::ServePorts> ports = child_.await_ports(timeout, /*stderr_lines=*/0);
  if (ports.ok()) {
    if (ports->http != http_port.load() || ports->resp != resp_port.load()) {
      last_failure_ = "the server printed other ports than it was given:\n" + child_.stdout_text();
      sigkill();
      return StartOutcome::kFailed;
    }
    up = true;
    return StartOutcome::kStarted;
  }
  if (const std::optional<ExitInfo>& info = child_.last_exit()) {
    const std::string err = child_.stderr_since_launch();
    last_failure_ = info->to_string() + ": " + trim(err);
    if (err.find("behind the high-water mark") != std::string::npos) {
      return StartOutcome::kRefusedClockBehind;
    }
    if (err.find("in use") != std::string::npos && err.find("bind") != std::string::npos) {
      // Someone took a port meanwhile: the next start picks new ones, and the clients
      // follow them.
      http_port = 0;
      resp_port = 0;
      return StartOutcome::kPortTaken;
    }
    return StartOutcome::kFailed;
  }
  last_failure_ = "no start-up lines within the timeout";
  sigkill();
  return StartOutcome::kFailed;
}

StartOutcome ServerProc::start(const std::vector<std::string>& common_args, int64_t offset_ms,
                               std::chrono::milliseconds timeout) {
  for (int attempt = 0; attempt < 4; ++attempt) {
    if (!launch(common_args, offset_ms)) return StartOutcome::kFailed;
    const StartOutcome outcome = await_start(timeout);
    if (outcome != StartOutcome::kPortTaken) return outcome;
  }
  return StartOutcome::kFailed;
}

void ServerProc::sigkill() {
  up = false;
  child_.kill();
}

void ServerProc::sigstop() { child_.send_signal(SIGSTOP); }

void ServerProc::sigcont() { child_.send_signal(SIGCONT); }

std::optional<ExitInfo> ServerProc::terminate(std::chrono::milliseconds timeout) {
  up = false;
  return child_.stop(timeout);  // SIGCONT first: a stopped server handles SIGTERM once resumed
}

std::optional<ExitInfo> ServerProc::check_unexpected_exit() {
  std::optional<ExitInfo> info = child_.try_reap();
  if (info) up = false;
  return info;
}

bool ServerProc::wait_ready(std::chrono::milliseconds timeout) const {
  const auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (http_get(http_port.load(), "/readyz", std::chrono::seconds(2)).status == 200) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return false;
}

}  // namespace idforge::torture

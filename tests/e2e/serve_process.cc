#include "serve_process.h"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "support/text.h"

extern char** environ;

namespace idforge::e2e {
namespace {

using test::trim;

using Clock = std::chrono::steady_clock;

// Writing to a child's stdin or a socket the peer closed must fail with EPIPE, not end
// the test binary.
[[maybe_unused]] const bool kSigpipeIgnored = [] {
  std::signal(SIGPIPE, SIG_IGN);
  return true;
}();

[[noreturn]] void die(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1'000'000));
}

std::string lower(std::string_view text) {
  std::string out(text);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string cut(std::string_view text, size_t max = 3000) {
  return text.size() <= max ? std::string(text) : std::string(text.substr(0, max)) + "...";
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (std::string& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code_of(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

// Where the RESP value starting at `pos` ends; npos when incomplete or not RESP.
size_t resp_value_end(std::string_view raw, size_t pos, int depth = 0) {
  if (pos >= raw.size() || depth > 32) return std::string_view::npos;
  size_t eol = raw.find("\r\n", pos);
  if (eol == std::string_view::npos) return std::string_view::npos;
  const char type = raw[pos];
  const std::string_view line = raw.substr(pos + 1, eol - pos - 1);
  auto number = [&]() -> int64_t {
    if (line.empty() || line.size() > 18) return -2;
    if (line == "-1") return -1;
    if (line.find_first_not_of("0123456789") != std::string_view::npos) return -2;
    return std::stoll(std::string(line));
  };
  switch (type) {
    case '+':
    case '-':
    case ':':
    case '_':
    case ',':
    case '#':
    case '(':
      return eol + 2;
    case '$':
    case '=':
    case '!': {
      int64_t n = number();
      if (n == -1) return eol + 2;
      if (n < 0) return std::string_view::npos;
      size_t end = eol + 2 + static_cast<size_t>(n) + 2;
      return end <= raw.size() ? end : std::string_view::npos;
    }
    case '*':
    case '~':
    case '>':
    case '%':
    case '|': {
      int64_t n = number();
      if (n == -1) return eol + 2;
      if (n < 0) return std::string_view::npos;
      if (type == '%' || type == '|') n *= 2;
      size_t at = eol + 2;
      for (int64_t i = 0; i < n; ++i) {
        at = resp_value_end(raw, at, depth + 1);
        if (at == std::string_view::npos) return at;
      }
      // An attribute precedes the value it describes.
      return type == '|' ? resp_value_end(raw, at, depth + 1) : at;
    }
    default:
      return std::string_view::npos;
  }
}

// Decodes a chunked body starting at `pos`; npos when incomplete.
size_t chunked_end(std::string_view raw, size_t pos, std::string& body) {
  for (;;) {
    size_t eol = raw.find("\r\n", pos);
    if (eol == std::string_view::npos) return eol;
    std::string size_text(raw.substr(pos, eol - pos));
    size_text = size_text.substr(0, size_text.find(';'));
    size_t size = 0;
    try {
      size = std::stoul(size_text, nullptr, 16);
    } catch (const std::exception&) {
      return std::string_view::npos;
    }
    pos = eol + 2;
    if (size == 0) {
      size_t end = raw.find("\r\n\r\n", pos - 2);
      return end == std::string_view::npos ? end : end + 4;
    }
    if (pos + size + 2 > raw.size()) return std::string_view::npos;
    body.append(raw.substr(pos, size));
    pos += size + 2;
  }
}

}  // namespace

RunResult run_program(const std::vector<std::string>& argv, std::string_view input,
                      milliseconds timeout) {
  std::vector<std::string> storage = argv;
  std::vector<char*> args = pointers(storage);
  int in_pipe[2];
  int out_pipe[2];
  int err_pipe[2];
  if (::pipe2(in_pipe, O_CLOEXEC) != 0 || ::pipe2(out_pipe, O_CLOEXEC) != 0 ||
      ::pipe2(err_pipe, O_CLOEXEC) != 0) {
    die("pipe2");
  }
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in_pipe[0], 0);
  posix_spawn_file_actions_adddup2(&actions, out_pipe[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err_pipe[1], 2);
  pid_t pid = 0;
  int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (rc != 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    errno = rc;
    die("posix_spawnp " + argv[0]);
  }

  RunResult result;
  const Clock::time_point deadline = Clock::now() + timeout;
  size_t written = 0;
  int in_fd = in_pipe[1];
  if (input.empty()) {
    ::close(in_fd);
    in_fd = -1;
  } else {
    ::fcntl(in_fd, F_SETFL, O_NONBLOCK);
  }
  std::array<pollfd, 3> fds{
      {{out_pipe[0], POLLIN, 0}, {err_pipe[0], POLLIN, 0}, {in_fd, POLLOUT, 0}}};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  bool timed_out = false;
  char buf[1 << 16];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    int ready = ::poll(fds.data(), fds.size(), remaining_ms(deadline));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) die("poll");
    if (ready == 0) {
      timed_out = true;
      break;
    }
    for (size_t i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        ::close(fds[i].fd);
        fds[i].fd = -1;
        continue;
      }
      sinks[i]->append(buf, static_cast<size_t>(n));
    }
    if (fds[2].fd >= 0 && fds[2].revents != 0) {
      ssize_t n = ::write(fds[2].fd, input.data() + written, input.size() - written);
      if (n > 0) written += static_cast<size_t>(n);
      if ((n < 0 && errno != EAGAIN && errno != EINTR) || written == input.size()) {
        ::close(fds[2].fd);  // EOF tells the program the input is complete
        fds[2].fd = -1;
      }
    }
  }
  for (pollfd& fd : fds) {
    if (fd.fd >= 0) ::close(fd.fd);
  }
  if (timed_out) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) die("waitpid");
  }
  result.exit_code = exit_code_of(status);
  if (timed_out) {
    result.err += "\n[run_program: killed after " + std::to_string(timeout.count()) + " ms]\n";
  }
  return result;
}

TempDir::TempDir(std::string_view prefix) {
  std::string tmpl = "/tmp/" + std::string(prefix) + "-XXXXXX";
  if (::mkdtemp(tmpl.data()) == nullptr) die("mkdtemp");
  path_ = tmpl;
}

TempDir::~TempDir() {
  std::error_code ignored;
  std::filesystem::remove_all(path_, ignored);
}

std::string HttpAnswer::header(std::string_view name) const {
  for (const auto& [key, value] : headers) {
    if (key == name) return value;
  }
  return "";
}

bool HttpAnswer::has_header(std::string_view name) const {
  return std::any_of(headers.begin(), headers.end(),
                     [&](const auto& h) { return h.first == name; });
}

nlohmann::json HttpAnswer::json() const { return nlohmann::json::parse(body, nullptr, false); }

std::string HttpAnswer::summary() const { return "\n--- answer:\n" + cut(raw) + "\n---"; }

std::vector<HttpAnswer> parse_http_answers(std::string_view raw, bool head) {
  std::vector<HttpAnswer> answers;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t header_end = raw.find("\r\n\r\n", pos);
    if (header_end == std::string_view::npos) break;
    HttpAnswer answer;
    std::string_view head_text = raw.substr(pos, header_end - pos);
    size_t line_end = head_text.find("\r\n");
    std::string_view status_line = head_text.substr(0, line_end);
    if (!status_line.starts_with("HTTP/") || status_line.size() < 12 || status_line[8] != ' ')
      break;
    std::string code(status_line.substr(9, 3));
    if (code.find_first_not_of("0123456789") != std::string::npos) break;
    answer.status = std::stoi(code);
    while (line_end != std::string_view::npos) {
      size_t next = head_text.find("\r\n", line_end + 2);
      std::string_view line = head_text.substr(
          line_end + 2, next == head_text.npos ? head_text.npos : next - line_end - 2);
      size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        answer.headers.emplace_back(lower(line.substr(0, colon)), trim(line.substr(colon + 1)));
      }
      line_end = next;
    }
    size_t body_start = header_end + 4;
    size_t end = body_start;
    const std::string length = answer.header("content-length");
    if (head || answer.status / 100 == 1 || answer.status == 204 || answer.status == 304) {
      end = body_start;
    } else if (!length.empty()) {
      size_t n = std::stoul(length);
      if (body_start + n > raw.size()) break;
      answer.body = std::string(raw.substr(body_start, n));
      end = body_start + n;
    } else if (lower(answer.header("transfer-encoding")).find("chunked") != std::string::npos) {
      end = chunked_end(raw, body_start, answer.body);
      if (end == std::string_view::npos) break;
    } else {
      answer.body = std::string(raw.substr(body_start));
      end = raw.size();
    }
    answer.raw = std::string(raw.substr(pos, end - pos));
    answers.push_back(std::move(answer));
    pos = end;
  }
  return answers;
}

std::vector<std::string> parse_resp_replies(std::string_view raw) {
  std::vector<std::string> replies;
  size_t pos = 0;
  while (pos < raw.size()) {
    size_t end = resp_value_end(raw, pos);
    if (end == std::string_view::npos) break;
    replies.emplace_back(raw.substr(pos, end - pos));
    pos = end;
  }
  return replies;
}

::testing::AssertionResult is_json_error(const HttpAnswer& answer, int status,
                                         std::string_view code) {
  if (answer.status != status) {
    return ::testing::AssertionFailure()
           << "want status " << status << ", got " << answer.status << answer.summary();
  }
  if (answer.header("content-type").find("application/json") == std::string::npos) {
    return ::testing::AssertionFailure() << "want a JSON content type" << answer.summary();
  }
  nlohmann::json body = answer.json();
  if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) {
    return ::testing::AssertionFailure() << "want {\"error\":{...}}" << answer.summary();
  }
  const nlohmann::json& error = body["error"];
  if (!error.contains("code") || error["code"] != code) {
    return ::testing::AssertionFailure() << "want error code " << code << answer.summary();
  }
  if (!error.contains("message") || !error["message"].is_string() ||
      error["message"].get<std::string>().empty()) {
    return ::testing::AssertionFailure() << "want a non-empty message" << answer.summary();
  }
  return ::testing::AssertionSuccess();
}

std::unique_ptr<ServeProcess> ServeProcess::start(const ServeOptions& options, std::string* error) {
  std::unique_ptr<ServeProcess> server(new ServeProcess());
  server->dir_ = std::make_unique<TempDir>();
  server->data_dir_ = options.data_dir.empty() ? server->dir_->path() + "/data" : options.data_dir;

  for (std::vector<std::string> args : options.setup) {
    args.insert(args.end(), {"--data-dir", server->data_dir_});
    RunResult r = run_idforge(args);
    if (r.exit_code != 0) {
      *error = "setup command failed: " + r.summary();
      return nullptr;
    }
  }

  const Status launched =
      server->child_.launch({.bin = IDFORGE_BIN,
                             .data_dir = server->data_dir_,
                             .args = options.flags,
                             .env = options.env,
                             .out_path = server->dir_->path() + "/serve.stdout",
                             .err_path = server->dir_->path() + "/serve.stderr"});
  if (!launched.ok()) {
    *error = launched.message();
    return nullptr;
  }
  // The stderr goes into the message whole below, with the stdout.
  const Result<test_support::ServePorts> ports =
      server->child_.await_ports(options.start_timeout, /*stderr_lines=*/0);
  if (!ports.ok()) {
    server->child_.kill();
    *error = "idforge serve did not print its two listening lines (" + ports.status().message() +
             ")\n--- stdout:\n" + cut(server->child_.stdout_text()) + "\n--- stderr:\n" +
             cut(server->stderr_text());
    return nullptr;
  }
  server->http_port_ = static_cast<uint16_t>(ports->http);
  server->resp_port_ = static_cast<uint16_t>(ports->resp);
  return server;
}

// The server goes before its temporary directory.
ServeProcess::~ServeProcess() { child_.kill(); }

std::string ServeProcess::url(std::string_view path) const {
  return "http://127.0.0.1:" + std::to_string(http_port_) + std::string(path);
}

RunResult ServeProcess::curl(const std::vector<std::string>& args) const {
  std::vector<std::string> argv = {"curl", "-sS", "--noproxy", "*", "--max-time", "10"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv);
}

HttpAnswer ServeProcess::http(std::string_view path, const std::vector<std::string>& extra) const {
  std::vector<std::string> args = {"-i"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back(url(path));
  RunResult r = curl(args);
  std::vector<HttpAnswer> answers = parse_http_answers(r.out);
  if (r.exit_code != 0 || answers.empty()) {
    HttpAnswer none;
    none.raw = "curl " + std::string(path) + ": " + r.summary();
    return none;
  }
  return answers.back();  // after any 100 Continue
}

HttpAnswer ServeProcess::head(std::string_view path) const {
  RunResult r = curl({"-I", url(path)});
  std::vector<HttpAnswer> answers = parse_http_answers(r.out, /*head=*/true);
  if (r.exit_code != 0 || answers.empty()) {
    HttpAnswer none;
    none.raw = "curl -I " + std::string(path) + ": " + r.summary();
    return none;
  }
  answers.back().raw = r.out;  // everything curl got, to show a body that should not be there
  return answers.back();
}

RunResult ServeProcess::redis(const std::vector<std::string>& args, std::string_view input) const {
  std::vector<std::string> argv = {"redis-cli", "-h", "127.0.0.1", "-p", std::to_string(resp_port_),
                                   "--no-raw"};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_program(argv, input);
}

std::string ServeProcess::stderr_text() const { return child_.stderr_text(); }

bool ServeProcess::wait_for_stderr(std::string_view needle, milliseconds timeout) const {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (stderr_text().find(needle) != std::string::npos) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(5));
  }
}

std::vector<LogLine> ServeProcess::log_lines(std::string_view event) const {
  std::vector<LogLine> lines;
  std::istringstream in(stderr_text());
  for (std::string line; std::getline(in, line);) {
    std::optional<LogLine> parsed = parse_log_line(line);
    if (parsed && (event.empty() || parsed->event == event)) lines.push_back(std::move(*parsed));
  }
  return lines;
}

bool ServeProcess::wait_for_log(std::string_view event, milliseconds timeout) const {
  const Clock::time_point deadline = Clock::now() + timeout;
  for (;;) {
    if (!log_lines(event).empty()) return true;
    if (Clock::now() >= deadline) return false;
    std::this_thread::sleep_for(milliseconds(20));
  }
}

std::string LogLine::get(std::string_view key) const {
  auto it = fields.find(key);
  return it == fields.end() ? std::string() : it->second;
}

int64_t LogLine::number(std::string_view key) const {
  const std::string value = get(key);
  if (value.empty() || value.size() > 18 ||
      value.find_first_not_of("0123456789", value[0] == '-' ? 1 : 0) != std::string::npos) {
    return -1;
  }
  return std::stoll(value);
}

std::optional<LogLine> parse_log_line(std::string_view text) {
  // 2026-11-26T04:10:00.123Z
  constexpr std::string_view kShape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (text.size() < kShape.size() + 2) return std::nullopt;
  for (size_t i = 0; i < kShape.size(); ++i) {
    const bool digit = std::isdigit(static_cast<unsigned char>(text[i])) != 0;
    if (kShape[i] == 'd' ? !digit : text[i] != kShape[i]) return std::nullopt;
  }
  LogLine line;
  line.raw = std::string(text);
  line.time = std::string(text.substr(0, kShape.size()));
  size_t pos = kShape.size();
  auto word = [&]() -> std::string {
    if (pos >= text.size() || text[pos] != ' ') return "";
    const size_t start = pos + 1;
    pos = std::min(text.find(' ', start), text.size());
    return std::string(text.substr(start, pos - start));
  };
  line.level = word();
  line.event = word();
  static const std::vector<std::string> kLevels = {"trace", "debug", "info", "warn", "error"};
  if (std::find(kLevels.begin(), kLevels.end(), line.level) == kLevels.end() ||
      line.event.empty()) {
    return std::nullopt;
  }
  while (pos < text.size()) {
    if (text[pos] != ' ') return std::nullopt;
    const size_t eq = text.find('=', pos + 1);
    if (eq == std::string_view::npos) return std::nullopt;
    std::string key(text.substr(pos + 1, eq - pos - 1));
    std::string value;
    pos = eq + 1;
    if (pos < text.size() && text[pos] == '"') {
      ++pos;
      bool closed = false;
      while (pos < text.size()) {
        const char c = text[pos++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c != '\\' || pos >= text.size()) {
          value += c;
          continue;
        }
        const char e = text[pos++];
        switch (e) {
          case 'n':
            value += '\n';
            break;
          case 'r':
            value += '\r';
            break;
          case 't':
            value += '\t';
            break;
          case 'u':  // \u00XX: control characters only
          case 'x': {
            const size_t digits = e == 'u' ? 4 : 2;
            if (pos + digits > text.size()) return std::nullopt;
            value +=
                static_cast<char>(std::stoi(std::string(text.substr(pos, digits)), nullptr, 16));
            pos += digits;
            break;
          }
          default:
            value += e;
        }
      }
      if (!closed) return std::nullopt;
    } else {
      const size_t end = std::min(text.find(' ', pos), text.size());
      value = std::string(text.substr(pos, end - pos));
      pos = end;
    }
    line.fields[std::move(key)] = std::move(value);
  }
  return line;
}

void ServeProcess::send_signal(int signal) const { child_.send_signal(signal); }

int ServeProcess::wait(milliseconds timeout) {
  const std::optional<test_support::ExitInfo> exit = child_.wait(timeout);
  return exit ? exit->code : -1;
}

int ServeProcess::stop(int signal, milliseconds timeout) {
  const std::optional<test_support::ExitInfo> exit = child_.stop(timeout, signal);
  return exit ? exit->code : -1;
}

RawClient::RawClient(uint16_t port, int receive_buffer) {
  std::string error;
  conn_.connect(port, Clock::now() + milliseconds(10'000), &error,
                {.receive_buffer = receive_buffer});
}

bool RawClient::send(std::string_view bytes) {
  std::string error;  // EPIPE, ECONNRESET: the server closed
  return conn_.send_all(bytes, Clock::now() + milliseconds(10'000), &error);
}

bool RawClient::read_some(milliseconds timeout) {
  if (!conn_.is_open() || conn_.peer_closed()) return false;
  std::string error;
  return conn_.read_more(Clock::now() + timeout, &error) || conn_.peer_closed();
}

bool RawClient::read_until(const std::function<bool(std::string_view)>& done,
                           milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!done(received()) && !closed() && connected()) {
    if (Clock::now() >= deadline) break;
    read_some(milliseconds(remaining_ms(deadline)));
  }
  return done(received());
}

bool RawClient::read_until_closed(milliseconds timeout) {
  const Clock::time_point deadline = Clock::now() + timeout;
  while (!closed() && connected() && Clock::now() < deadline) {
    read_some(milliseconds(remaining_ms(deadline)));
  }
  return closed();
}

void RawClient::read_for(milliseconds duration) {
  const Clock::time_point deadline = Clock::now() + duration;
  while (!closed() && connected() && Clock::now() < deadline) {
    read_some(milliseconds(remaining_ms(deadline)));
  }
}

bool can_connect(uint16_t port) {
  RawClient client(port);
  return client.connected();
}

}  // namespace idforge::e2e

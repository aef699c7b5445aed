// A small JSON reader for the server's answers (`{"kind":...,"ids":[...]}` and
// `{"error":{"code":...,"message":...}}`, docs/api.md): the client library links nothing
// but idforge_core, so it carries no JSON library. Any valid JSON is read; numbers are kept
// as their text.
//
// Pure functions on values: thread-safe.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace idforge::client {

struct JsonValue {
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };
  Type type = Type::kNull;
  bool boolean = false;
  std::string text;               // a string's value (UTF-8), or a number as written
  std::vector<JsonValue> items;   // an array's items; an object's member values
  std::vector<std::string> keys;  // an object's member names, in order, one per item

  // The member of an object by key (the first one); null when absent or not an object.
  const JsonValue* find(std::string_view key) const;
};

// One JSON document (surrounding white space allowed); nullopt when the text is not
// JSON or nests deeper than 64 levels.
std::optional<JsonValue> parse_json(std::string_view text);

}  // namespace idforge::client

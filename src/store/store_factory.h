// The kinds of segment store and opening one from its URL: the one table of kinds
// (store_factory.cc) that the factory, `idforge serve`'s settings check and the CLI's
// --store help all read. Each kind's code is its own folder and target
// (store/<kind>/, idforge_store_<kind>); adding one is a folder and a row
// (docs/contributing.md, "Adding a segment store").
#pragma once

#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "idforge/segment_store.h"

namespace idforge::store {

struct StoreKind {
  std::string_view name;    // "postgres": the kind as docs and messages name it
  std::string_view scheme;  // "postgres://": a URL of this kind starts with it
  std::string_view alias;   // another scheme opened the same way ("postgresql://"), or ""
  std::string_view form;    // what follows the scheme, for help: "USER@HOST:PORT/DB"
  std::string_view what;    // "PostgreSQL"
  // Opens the store (connecting once, so a wrong address fails at start); `url` is
  // the whole URL, scheme included.
  Result<std::unique_ptr<SegmentStore>> (*open)(std::string_view url);
};

// Every kind, in the order help lists them.
std::span<const StoreKind> store_kinds();
// The kind whose scheme (or alias) `url` starts with; null for none.
const StoreKind* find_store_kind(std::string_view url);
// The URL forms for help and errors: "sqlite:PATH, postgres://USER@HOST:PORT/DB, ...
// or redis-sentinel://HOST:PORT,.../MASTER".
std::string store_url_forms();
// The form of the kind named `name` ("mysql" -> "mysql://USER:PASSWORD@HOST:PORT/DB");
// "" for no such kind.
std::string store_url_form(std::string_view name);
// One line per kind, "  FORM  WHAT (also ALIAS)", joined by newlines, for a command's
// help.
std::string describe_store_kinds();
// Ok when some kind takes `url`; else InvalidArgument "unknown store URL '...'
// (expected FORMS)". Only the scheme is checked: the kind's own parser checks the rest
// when the store is opened.
Status check_store_url(std::string_view url);
// The URL of an SQLite store in the file `path` (the default store of a data dir).
std::string sqlite_url(std::string_view path);

// Opens the store `url` names, by its kind.
Result<std::unique_ptr<SegmentStore>> open_store(std::string_view url);

}  // namespace idforge::store

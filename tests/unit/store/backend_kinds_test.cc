// The tables of kinds of both backend layers (store/store_factory.h,
// coord/registry_factory.h): every row is found by its scheme and alias, help lists every
// row, an unknown scheme names every form; and the checks of a new tag that every store
// shares (store/store_common.h).
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "coord/registry_factory.h"
#include "store/store_common.h"
#include "store/store_factory.h"

namespace idforge {
namespace {

TEST(StoreKindsTest, EveryRowIsFoundByItsSchemeAndAliasAndListed) {
  const std::string forms = store::store_url_forms();
  const std::string described = store::describe_store_kinds();
  std::set<std::string> schemes;
  for (const store::StoreKind& kind : store::store_kinds()) {
    const std::string form = std::string(kind.scheme) + std::string(kind.form);
    EXPECT_TRUE(schemes.insert(std::string(kind.scheme)).second) << kind.scheme;
    EXPECT_EQ(store::find_store_kind(form), &kind) << form;
    EXPECT_TRUE(store::check_store_url(form).ok()) << form;
    EXPECT_NE(forms.find(form), std::string::npos) << forms;
    EXPECT_NE(described.find(form), std::string::npos) << described;
    EXPECT_NE(described.find(kind.what), std::string::npos) << described;
    if (!kind.alias.empty()) {
      EXPECT_EQ(store::find_store_kind(std::string(kind.alias) + "x"), &kind) << kind.alias;
    }
    EXPECT_NE(kind.open, nullptr) << kind.name;
  }
  for (const char* name : {"sqlite", "postgres", "mysql", "redis"}) {
    EXPECT_FALSE(store::store_url_form(name).empty()) << name;
  }
  EXPECT_EQ(store::store_url_form("mongodb"), "");
}

TEST(StoreKindsTest, AnUnknownSchemeNamesEveryFormAndNoPassword) {
  for (const char* url : {"mongodb://app:s3cret@db/ids", "", "SQLITE:x", "postgres:/x"}) {
    EXPECT_EQ(store::find_store_kind(url), nullptr) << url;
    const Status checked = store::check_store_url(url);
    ASSERT_EQ(checked.code(), StatusCode::kInvalidArgument) << url;
    EXPECT_NE(checked.message().find("unknown store URL"), std::string::npos);
    EXPECT_NE(checked.message().find(store::store_url_forms()), std::string::npos);
    EXPECT_EQ(checked.message().find("s3cret"), std::string::npos) << checked.message();
    EXPECT_EQ(store::open_store(url).status().message(), checked.message());
  }
  EXPECT_EQ(store::sqlite_url("/var/lib/idforge/segments.db"),
            std::string(store::store_kinds()[0].scheme) + "/var/lib/idforge/segments.db");
  EXPECT_EQ(store::find_store_kind(store::sqlite_url("x"))->name, "sqlite");
}

TEST(StoreKindsTest, ANewTagStartsFromOneToTwoToTheSixtyThreeMinusOne) {
  TagSpec spec;
  spec.name = "order";
  EXPECT_TRUE(store::check_new_tag(spec).ok());
  spec.start = store::kMaxId;
  EXPECT_TRUE(store::check_new_tag(spec).ok());
  for (uint64_t start : {uint64_t{0}, store::kMaxId + 1}) {
    spec.start = start;
    const Status checked = store::check_new_tag(spec);
    EXPECT_EQ(checked.code(), StatusCode::kInvalidArgument) << start;
    EXPECT_NE(checked.message().find("start must be from 1 to"), std::string::npos)
        << checked.message();
  }
  spec.start = 1;
  spec.step = 0;
  EXPECT_EQ(store::check_new_tag(spec).code(), StatusCode::kInvalidArgument);
  spec.step = 1;
  spec.name = "a b";
  EXPECT_EQ(store::check_new_tag(spec).code(), StatusCode::kInvalidArgument);
}

TEST(RegistryKindsTest, EveryRowIsFoundByItsSchemeAndListed) {
  const std::string forms = coord::registry_url_forms();
  const std::string described = coord::describe_registry_kinds();
  for (const coord::RegistryKind& kind : coord::registry_kinds()) {
    for (std::string_view rest : kind.forms) {
      if (rest.empty()) continue;
      const std::string form = std::string(kind.scheme) + std::string(rest);
      EXPECT_EQ(coord::find_registry_kind(form + "?ttl_ms=1000"), &kind) << form;
      EXPECT_TRUE(coord::check_registry_url(form).ok()) << form;
      EXPECT_NE(forms.find(form), std::string::npos) << forms;
    }
    EXPECT_NE(described.find(kind.what), std::string::npos) << described;
    EXPECT_NE(kind.open, nullptr) << kind.name;
  }
  // The kinds that need no address take their bare word.
  EXPECT_EQ(coord::find_registry_kind("local")->name, "local");
  EXPECT_EQ(coord::find_registry_kind("static")->name, "static");
  EXPECT_EQ(coord::find_registry_kind("etcd"), nullptr);
  EXPECT_TRUE(coord::find_registry_kind(coord::local_registry_url("/tmp/w"))->on_this_host);
  EXPECT_TRUE(coord::check_registry_url("").ok());  // the default
  const Status unknown = coord::check_registry_url("consul://app:s3cret@h:1");
  ASSERT_EQ(unknown.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(unknown.message().find(forms), std::string::npos) << unknown.message();
  EXPECT_EQ(unknown.message().find("s3cret"), std::string::npos) << unknown.message();
}

}  // namespace
}  // namespace idforge

// TagIndex: the server's map from tag name to its state, read on every request without
// a lock and grown by one writer at a time.
//
// Why not a map copied on each insert (what it replaced): the copies could never be
// freed while a reader might hold one, so ten thousand tags kept fifty million map
// nodes alive (memory and time grew with the square of the tags). Here each name has
// one slot for good, buckets are chains of nodes that are only ever prepended, and a
// table that fills up is replaced by one twice its size whose chains point at the same
// slots. Old tables stay until the index ends (a reader may be walking one); their sizes
// halve, so all of them together take less than the current one.
//
// Readers: find() and for_each(), from any thread, never blocked. Writers: set(), which
// the owner serializes with its own lock (SegmentPart::tags_mu_).
#pragma once

#include <atomic>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace idforge::server {

template <typename T>
class TagIndex {
 public:
  TagIndex() { publish_table(kFirstBuckets); }
  TagIndex(const TagIndex&) = delete;
  TagIndex& operator=(const TagIndex&) = delete;

  // The value of `name`, or nullptr when it has none.
  T* find(std::string_view name) const {
    const Slot* slot = find_slot(table_.load(std::memory_order_acquire), name);
    return slot == nullptr ? nullptr : slot->value.load(std::memory_order_acquire);
  }

  // Sets (or, with nullptr, clears) the value of `name`. Callers serialize set() calls.
  void set(std::string_view name, T* value) {
    const Table* table = table_.load(std::memory_order_relaxed);
    if (Slot* slot = find_slot(table, name)) {
      slot->value.store(value, std::memory_order_release);
      return;
    }
    if (value == nullptr) return;
    Slot& slot = slots_.emplace_back(name, value);
    if (slots_.size() > table->buckets.size()) {
      publish_table(table->buckets.size() * 2);  // links every slot, this one included
      return;
    }
    link(*tables_.back(), &slot);
  }

  // How many names it has held, and the chain nodes of all its tables (for tests: the
  // second stays at most three times the first). Writer's side: callers serialize with set().
  size_t names() const { return slots_.size(); }
  size_t nodes() const {
    size_t n = 0;
    for (const auto& table : tables_) n += table->nodes.size();
    return n;
  }

  // Calls fn(name, value) for every name with a value, in no particular order.
  void for_each(const std::function<void(const std::string&, T*)>& fn) const {
    const Table* table = table_.load(std::memory_order_acquire);
    for (const std::atomic<Node*>& bucket : table->buckets) {
      for (const Node* n = bucket.load(std::memory_order_acquire); n != nullptr; n = n->next) {
        if (T* value = n->slot->value.load(std::memory_order_acquire)) fn(n->slot->name, value);
      }
    }
  }

 private:
  static constexpr size_t kFirstBuckets = 64;

  struct Slot {
    Slot(std::string_view n, T* v) : name(n), value(v) {}
    const std::string name;
    std::atomic<T*> value;
  };
  // A chain link; `next` is written before the node is published and never again.
  struct Node {
    Slot* slot;
    Node* next;
  };
  struct Table {
    explicit Table(size_t n) : buckets(n) {}
    std::vector<std::atomic<Node*>> buckets;  // a power of two
    std::deque<Node> nodes;                   // never moves a node it holds
  };

  static size_t bucket_of(const Table& table, std::string_view name) {
    return std::hash<std::string_view>{}(name) & (table.buckets.size() - 1);
  }

  static Slot* find_slot(const Table* table, std::string_view name) {
    const std::atomic<Node*>& bucket = table->buckets[bucket_of(*table, name)];
    for (const Node* n = bucket.load(std::memory_order_acquire); n != nullptr; n = n->next) {
      if (n->slot->name == name) return n->slot;
    }
    return nullptr;
  }

  // Prepends a node for `slot`: readers see the whole chain or the chain without it.
  static void link(Table& table, Slot* slot) {
    std::atomic<Node*>& bucket = table.buckets[bucket_of(table, slot->name)];
    Node& node = table.nodes.emplace_back(Node{slot, bucket.load(std::memory_order_relaxed)});
    bucket.store(&node, std::memory_order_release);
  }

  void publish_table(size_t buckets) {
    auto table = std::make_unique<Table>(buckets);
    for (Slot& slot : slots_) link(*table, &slot);
    tables_.push_back(std::move(table));
    table_.store(tables_.back().get(), std::memory_order_release);
  }

  std::atomic<const Table*> table_{nullptr};
  std::deque<Slot> slots_;                      // one per name ever set; never moves
  std::vector<std::unique_ptr<Table>> tables_;  // the current one last
};

}  // namespace idforge::server

// A map that holds at most `capacity` entries and forgets the least recently used one first.
//
// Why not clear-when-full: a job that cycles through more call shapes than the cache holds
// (a sweep of sizes, a model with many layers) would otherwise lose its hot entries together with
// the cold ones and pay every decision again, all at once. Evicting one cold entry per new one
// keeps the cost of a miss constant. Values are handed out as shared_ptr so an evicted entry
// stays alive for whoever still holds it (an in-flight request's plan).
#pragma once

#include <cstddef>
#include <list>
#include <map>
#include <memory>
#include <utility>

namespace hccl::common {

template <class Key, class Value>
class BoundedCache {
 public:
  explicit BoundedCache(std::size_t capacity) : capacity_(capacity > 0 ? capacity : 1) {}

  // The entry for `key`, marked most recently used; nullptr when absent.
  std::shared_ptr<const Value> find(const Key& key) {
    auto it = index_.find(key);
    if (it == index_.end()) return nullptr;
    order_.splice(order_.begin(), order_, it->second);
    return it->second->second;
  }

  // Stores `value` under `key` (replacing an entry of the same key) and returns it.
  std::shared_ptr<const Value> insert(const Key& key, std::shared_ptr<const Value> value) {
    if (auto it = index_.find(key); it != index_.end()) {
      order_.erase(it->second);
      index_.erase(it);
    }
    order_.emplace_front(key, std::move(value));
    index_.emplace(key, order_.begin());
    while (index_.size() > capacity_) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return order_.front().second;
  }

  std::size_t size() const { return index_.size(); }
  std::size_t capacity() const { return capacity_; }

 private:
  using Entry = std::pair<Key, std::shared_ptr<const Value>>;
  std::size_t capacity_;
  std::list<Entry> order_;  // most recently used first
  std::map<Key, typename std::list<Entry>::iterator> index_;
};

}  // namespace hccl::common

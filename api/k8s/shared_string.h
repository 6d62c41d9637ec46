#pragma once
// SharedString: an immutable string that copies share, in one heap block: its holders' count,
// its length and its characters. For a key that many objects hold and that is longer than a
// std::string keeps inline: a job's id ("namespace/group"), which the JobInfo, its cache
// slot's map key and every one of its tasks hold.
//
// A k8s::Shared<std::string> took two blocks: the count beside a 32-byte std::string (a
// 40-byte block, tcmalloc's 48-byte class) and, for an id over 15 characters, the std::string's
// characters (32 bytes more up to 31 characters): 80 bytes a job. A SharedString of up to 19
// characters is one 32-byte block, up to 35 one 48-byte block.
//
// It reads as the strings of api/inline_string.h do (StringOps): a std::string_view
// (implicitly), a std::string (implicitly, a copy), comparisons with any string, `+`, fmt,
// JSON, std::hash. The characters are followed by a '\0' (c_str()). k8s::InternShared and
// InternSharedKey (api/k8s/compact.h) return an equal block already held, so that the objects
// that hold one id hold one block.
//
// Thread-safety: as a std::shared_ptr: copies may be made, read and destroyed on any thread.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <utility>

#include "api/inline_string.h"
#include "api/k8s/shared.h"

namespace volcache::k8s {

template <class>
class SharedTable;

// A SharedString's block: its counts and length, the characters after them.
struct SharedStringBlock {
  std::atomic<uint32_t> refs{1};    // the SharedStrings that point here
  std::atomic<bool> frozen{false};  // as a Shared block's (a string is never written)
  // Set once, by SharedTable (api/k8s/compact.cc), before the table hands the block out.
  std::atomic<bool> interned{false};
  uint32_t size = 0;
  char* chars() { return reinterpret_cast<char*>(this + 1); }
  const char* chars() const { return reinterpret_cast<const char*>(this + 1); }
};
static_assert(sizeof(SharedStringBlock) == 12);

class SharedString : public StringOps<SharedString>, public CountedBlockRef<SharedString, SharedStringBlock> {
  using Base = CountedBlockRef<SharedString, SharedStringBlock>;
  using Block = SharedStringBlock;
  using Base::block_;
  using Base::Release;
  using Base::Reset;

 public:
  SharedString() = default;
  explicit SharedString(std::string_view s) : Base(Make(s)) {}

  const char* data() const { return block_ != nullptr ? block_->chars() : ""; }
  size_t size() const { return block_ != nullptr ? block_->size : 0; }

 private:
  template <class>
  friend class SharedTable;
  friend Base;

  // Null for an empty string.
  static Block* Make(std::string_view s);
  static void Free(Block* b);
  static std::string_view ValueOf(const Block* b) { return std::string_view(b->chars(), b->size); }
};
static_assert(sizeof(SharedString) == 8);

}  // namespace volcache::k8s

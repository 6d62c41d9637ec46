#include "api/resource.h"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <deque>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "api/check.h"
#include "api/mutex.h"

namespace volcache {
namespace {

constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();

int64_t SatAdd(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? kMax : kMin;
  return r;
}

int64_t SatSub(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) return b < 0 ? kMax : kMin;
  return r;
}

// The process-wide name table. Names live in a deque so references handed out by Name()
// stay valid while other threads intern new names; the index maps views of those strings.
class NameTable {
 public:
  NameTable() { InternLocked("pods"); }

  uint32_t Intern(std::string_view name) EXCLUDES(mu_) {
    {
      ReaderMutexLock lock(&mu_);
      if (auto it = index_.find(name); it != index_.end()) return it->second;
    }
    WriterMutexLock lock(&mu_);
    if (auto it = index_.find(name); it != index_.end()) return it->second;
    return InternLocked(name);
  }

  int64_t Find(std::string_view name) const EXCLUDES(mu_) {
    ReaderMutexLock lock(&mu_);
    auto it = index_.find(name);
    return it == index_.end() ? -1 : static_cast<int64_t>(it->second);
  }

  // The reference stays valid after the lock: names_ is append-only and a deque never
  // moves its elements.
  const std::string& Name(uint32_t id) const EXCLUDES(mu_) {
    ReaderMutexLock lock(&mu_);
    VC_CHECK(id < names_.size(), "unknown resource name id " + std::to_string(id));
    return names_[id];
  }

 private:
  uint32_t InternLocked(std::string_view name) REQUIRES(mu_) {
    const auto id = static_cast<uint32_t>(names_.size());
    names_.emplace_back(name);
    index_.emplace(std::string_view(names_.back()), id);
    return id;
  }

  mutable SharedMutex mu_;
  std::deque<std::string> names_ GUARDED_BY(mu_);                         // append-only
  std::unordered_map<std::string_view, uint32_t> index_ GUARDED_BY(mu_);  // views into names_
};

NameTable& Names() {
  static NameTable* table = new NameTable();  // never destroyed: usable during exit
  return *table;
}

bool StartsWith(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

// Walks the union of the scalar dimensions of a and b in id order. `f(id, l, r)` gets
// pointers to the values, nullptr where the dimension is absent; it returns false to stop.
// Returns false when stopped early.
template <typename F>
bool ForEachDimension(const Resource::Scalar* a, const Resource::Scalar* a_end, const Resource::Scalar* b,
                      const Resource::Scalar* b_end, F&& f) {
  while (a != a_end || b != b_end) {
    bool keep_going;
    // Scalars are packed: the values are read into aligned locals.
    if (b == b_end || (a != a_end && a->id < b->id)) {
      const int64_t av = a->value;
      keep_going = f(a->id, &av, static_cast<const int64_t*>(nullptr));
      ++a;
    } else if (a == a_end || b->id < a->id) {
      const int64_t bv = b->value;
      keep_going = f(b->id, static_cast<const int64_t*>(nullptr), &bv);
      ++b;
    } else {
      const int64_t av = a->value, bv = b->value;
      keep_going = f(a->id, &av, &bv);
      ++a;
      ++b;
    }
    if (!keep_going) return false;
  }
  return true;
}

// A scalar dimension seen from a comparison: its value, or infinite when absent under
// kInfinity (absent under kZero is 0).
struct Side {
  bool infinite;
  int64_t value;
};

Side Resolve(const int64_t* v, DimensionDefault missing) {
  if (v != nullptr) return {false, *v};
  return {missing == DimensionDefault::kInfinity, 0};
}

}  // namespace

// ---------------------------------------------------------------------------------------
// ResourceNames

uint32_t ResourceNames::Intern(std::string_view name) { return Names().Intern(name); }
int64_t ResourceNames::Find(std::string_view name) { return Names().Find(name); }
const std::string& ResourceNames::Name(uint32_t id) { return Names().Name(id); }

ResourceKind ClassifyResourceName(std::string_view name) {
  if (name == "cpu") return ResourceKind::kCpu;
  if (name == "memory") return ResourceKind::kMemory;
  if (name == "pods") return ResourceKind::kPods;
  if (name == "ephemeral-storage" || StartsWith(name, "hugepages-") ||
      StartsWith(name, "attachable-volumes-")) {
    return ResourceKind::kScalar;
  }
  // Quota-only names (count/pods, requests.cpu, limits.nvidia.com/gpu) are never accounted.
  if (StartsWith(name, "count/") || StartsWith(name, "requests.") || StartsWith(name, "limits.")) {
    return ResourceKind::kIgnored;
  }
  // Extended (vendor.com/x) and prefixed native (kubernetes.io/x) resources.
  if (name.find('/') != std::string_view::npos) return ResourceKind::kScalar;
  return ResourceKind::kIgnored;
}

// ---------------------------------------------------------------------------------------
// Storage

Resource::Resource(int64_t milli_cpu, int64_t memory,
                   std::initializer_list<std::pair<std::string_view, int64_t>> scalars)
    : milli_cpu_(milli_cpu), memory_(memory) {
  for (const auto& [name, value] : scalars) SetScalar(name, value);
}

const Resource& Resource::Zero() {
  static const Resource zero{};
  return zero;
}

void Resource::CopyScalarsFromHeap(const Resource& other) {
  if (other.size_ > kInlineScalars) {
    heap_ = new Scalar[static_cast<size_t>(other.size_)];
    capacity_ = other.size_;
  }
  std::copy(other.heap_, other.heap_ + other.size_, data());
  size_ = other.size_;
}

Resource& Resource::operator=(const Resource& other) {
  if (this == &other) return *this;
  milli_cpu_ = other.milli_cpu_;
  memory_ = other.memory_;
  max_task_num_ = other.max_task_num_;
  size_ = 0;
  Reserve(other.size_);  // keeps an existing heap buffer that is large enough
  std::copy(other.data(), other.data() + other.size_, data());
  size_ = other.size_;
  return *this;
}

Resource& Resource::operator=(Resource&& other) noexcept {
  if (this == &other) return *this;
  if (capacity_ > kInlineScalars) delete[] heap_;
  capacity_ = kInlineScalars;
  milli_cpu_ = other.milli_cpu_;
  memory_ = other.memory_;
  max_task_num_ = other.max_task_num_;
  if (other.capacity_ > kInlineScalars) {
    heap_ = other.heap_;
    capacity_ = other.capacity_;
    size_ = other.size_;
    other.capacity_ = kInlineScalars;
  } else {
    std::copy(other.inline_, other.inline_ + other.size_, inline_);
    size_ = other.size_;
  }
  other.size_ = 0;
  return *this;
}

const Resource::Scalar* Resource::scalars_begin() const { return data(); }

void Resource::Reserve(int n) {
  if (n <= capacity_) return;
  VC_CHECK(n <= std::numeric_limits<int16_t>::max(), "too many scalar resource dimensions");
  const int new_capacity =
      std::min<int>(std::max(n, 2 * static_cast<int>(capacity_)), std::numeric_limits<int16_t>::max());
  auto* fresh = new Scalar[static_cast<size_t>(new_capacity)];
  std::copy(data(), data() + size_, fresh);
  if (capacity_ > kInlineScalars) delete[] heap_;
  heap_ = fresh;
  capacity_ = static_cast<int16_t>(new_capacity);
}

Resource::Scalar* Resource::Insert(uint32_t id) {
  Scalar* begin = data();
  Scalar* it =
      std::lower_bound(begin, begin + size_, id, [](const Scalar& s, uint32_t v) { return s.id < v; });
  if (it != begin + size_ && it->id == id) return it;
  const auto offset = it - begin;
  Reserve(size_ + 1);
  begin = data();
  it = begin + offset;
  std::copy_backward(it, begin + size_, begin + size_ + 1);
  *it = Scalar{id, 0};
  ++size_;
  return it;
}

int64_t Resource::Get(uint32_t id) const {
  for (const Scalar* s = scalars_begin(); s != scalars_end(); ++s) {
    if (s->id == id) return s->value;
  }
  return 0;
}

int64_t Resource::Get(std::string_view name) const {
  if (name == "cpu") return milli_cpu_;
  if (name == "memory") return memory_;
  const int64_t id = ResourceNames::Find(name);
  return id < 0 ? 0 : Get(static_cast<uint32_t>(id));
}

bool Resource::Has(uint32_t id) const {
  for (const Scalar* s = scalars_begin(); s != scalars_end(); ++s) {
    if (s->id == id) return true;
  }
  return false;
}

void Resource::SetScalar(uint32_t id, int64_t value) { Insert(id)->value = value; }

void Resource::AddScalar(uint32_t id, int64_t delta) {
  Scalar* s = Insert(id);
  s->value = SatAdd(s->value, delta);
}

void Resource::RemoveScalar(uint32_t id) {
  Scalar* begin = data();
  Scalar* end = begin + size_;
  Scalar* it = std::find_if(begin, end, [id](const Scalar& s) { return s.id == id; });
  if (it == end) return;
  std::copy(it + 1, end, it);
  --size_;
}

// ---------------------------------------------------------------------------------------
// Predicates

bool Resource::IsEmpty() const {
  if (milli_cpu_ > 0 || memory_ > 0) return false;
  for (const Scalar* s = scalars_begin(); s != scalars_end(); ++s) {
    // Every task request carries pods = 1, so (like Volcano) pods never makes it non-empty.
    if (s->id == ResourceNames::kPods) continue;
    if (s->value > 0) return false;
  }
  return true;
}

bool Resource::IsZero(std::string_view name) const { return Get(name) <= 0; }

// ---------------------------------------------------------------------------------------
// Arithmetic

// Applies op to each of rr's scalars, inserting those *this lacks. Both arrays are sorted
// by id, so one forward walk finds them all when *this already has every id of rr (a node's
// or a job's sums, to which a task adds `pods` and its GPU): no search and no call per
// scalar. The first missing id sends the rest through Insert.
template <typename Op>
void Resource::MergeScalars(const Resource& rr, Op op) {
  const Scalar* s = rr.data();
  const Scalar* const end = s + rr.size_;
  Scalar* mine = data();
  Scalar* const mine_end = mine + size_;
  for (; s != end; ++s, ++mine) {
    while (mine != mine_end && mine->id < s->id) ++mine;
    if (mine == mine_end || mine->id != s->id) break;
    mine->value = op(mine->value, s->value);
  }
  for (; s != end; ++s) {
    Scalar* m = Insert(s->id);
    m->value = op(m->value, s->value);
  }
}

Resource& Resource::Add(const Resource& rr) {
  milli_cpu_ = SatAdd(milli_cpu_, rr.milli_cpu_);
  memory_ = SatAdd(memory_, rr.memory_);
  if (rr.size_ != 0) MergeScalars(rr, [](int64_t a, int64_t b) { return SatAdd(a, b); });
  return *this;
}

Status Resource::Sub(const Resource& rr) {
  if (!rr.LessEqual(*this, DimensionDefault::kZero)) {
    return Status::FailedPrecondition("resource is not sufficient to do operation: <" + ToString() +
                                      "> sub <" + rr.ToString() + ">, short of " +
                                      rr.InsufficientDimensions(*this));
  }
  SubUnchecked(rr);
  return Status::Ok();
}

Resource& Resource::SubUnchecked(const Resource& rr) {
  milli_cpu_ = SatSub(milli_cpu_, rr.milli_cpu_);
  memory_ = SatSub(memory_, rr.memory_);
  if (rr.size_ != 0) MergeScalars(rr, [](int64_t a, int64_t b) { return SatSub(a, b); });
  return *this;
}

namespace {
int64_t Scale(int64_t v, double ratio) {
  // long double has a 64-bit mantissa on x86-64, so v itself is exact.
  const long double x = static_cast<long double>(v) * static_cast<long double>(ratio);
  if (std::isnan(x)) return 0;
  if (x >= 9223372036854775807.0L) return kMax;
  if (x <= -9223372036854775808.0L) return kMin;
  return static_cast<int64_t>(std::llroundl(x));
}
}  // namespace

Resource& Resource::Multi(double ratio) {
  milli_cpu_ = Scale(milli_cpu_, ratio);
  memory_ = Scale(memory_, ratio);
  for (Scalar* s = data(); s != data() + size_; ++s) s->value = Scale(s->value, ratio);
  return *this;
}

Resource& Resource::SetMax(const Resource& rr) {
  milli_cpu_ = std::max(milli_cpu_, rr.milli_cpu_);
  memory_ = std::max(memory_, rr.memory_);
  for (const Scalar* s = rr.scalars_begin(); s != rr.scalars_end(); ++s) {
    if (!Has(s->id)) {
      SetScalar(s->id, s->value);
    } else {
      Scalar* mine = Insert(s->id);
      mine->value = std::max(mine->value, s->value);
    }
  }
  return *this;
}

Resource& Resource::MinDimension(const Resource& rr, DimensionDefault missing) {
  milli_cpu_ = std::min(milli_cpu_, rr.milli_cpu_);
  memory_ = std::min(memory_, rr.memory_);
  for (Scalar* s = data(); s != data() + size_; ++s) {
    if (rr.Has(s->id)) {
      s->value = std::min(s->value, rr.Get(s->id));
    } else if (missing == DimensionDefault::kZero) {
      s->value = 0;
    }
  }
  return *this;
}

Resource& Resource::FitDelta(const Resource& rr) {
  if (rr.milli_cpu_ > 0) milli_cpu_ = SatSub(SatSub(milli_cpu_, rr.milli_cpu_), 1);
  if (rr.memory_ > 0) memory_ = SatSub(SatSub(memory_, rr.memory_), 1);
  for (const Scalar* s = rr.scalars_begin(); s != rr.scalars_end(); ++s) {
    if (s->value <= 0) continue;
    Scalar* mine = Insert(s->id);
    mine->value = SatSub(SatSub(mine->value, s->value), 1);
  }
  return *this;
}

// ---------------------------------------------------------------------------------------
// Comparisons. Every scalar dimension present on either side takes part; an absent one is 0
// (kZero) or infinite (kInfinity). Infinite on the right always satisfies "l <= r" / "l < r";
// infinite on the left never does.

bool Resource::LessEqual(const Resource& rr, DimensionDefault missing) const {
  if (milli_cpu_ > rr.milli_cpu_ || memory_ > rr.memory_) return false;
  return ForEachDimension(scalars_begin(), scalars_end(), rr.scalars_begin(), rr.scalars_end(),
                          [missing](uint32_t, const int64_t* l, const int64_t* r) {
                            const Side left = Resolve(l, missing), right = Resolve(r, missing);
                            if (right.infinite) return true;
                            return !left.infinite && left.value <= right.value;
                          });
}

bool Resource::Less(const Resource& rr, DimensionDefault missing) const {
  if (milli_cpu_ >= rr.milli_cpu_ || memory_ >= rr.memory_) return false;
  return ForEachDimension(scalars_begin(), scalars_end(), rr.scalars_begin(), rr.scalars_end(),
                          [missing](uint32_t, const int64_t* l, const int64_t* r) {
                            const Side left = Resolve(l, missing), right = Resolve(r, missing);
                            if (right.infinite) return true;
                            return !left.infinite && left.value < right.value;
                          });
}

bool Resource::LessPartly(const Resource& rr, DimensionDefault missing) const {
  if (milli_cpu_ < rr.milli_cpu_ || memory_ < rr.memory_) return true;
  // Stops (returns false) at the first dimension that is less.
  return !ForEachDimension(scalars_begin(), scalars_end(), rr.scalars_begin(), rr.scalars_end(),
                           [missing](uint32_t, const int64_t* l, const int64_t* r) {
                             const Side left = Resolve(l, missing), right = Resolve(r, missing);
                             if (left.infinite) return true;
                             return !(right.infinite || left.value < right.value);
                           });
}

bool Resource::LessEqualPartly(const Resource& rr, DimensionDefault missing) const {
  if (milli_cpu_ <= rr.milli_cpu_ || memory_ <= rr.memory_) return true;
  return !ForEachDimension(scalars_begin(), scalars_end(), rr.scalars_begin(), rr.scalars_end(),
                           [missing](uint32_t, const int64_t* l, const int64_t* r) {
                             const Side left = Resolve(l, missing), right = Resolve(r, missing);
                             if (left.infinite) return true;
                             return !(right.infinite || left.value <= right.value);
                           });
}

bool Resource::Equal(const Resource& rr, DimensionDefault missing) const {
  if (milli_cpu_ != rr.milli_cpu_ || memory_ != rr.memory_) return false;
  return ForEachDimension(scalars_begin(), scalars_end(), rr.scalars_begin(), rr.scalars_end(),
                          [missing](uint32_t, const int64_t* l, const int64_t* r) {
                            const Side left = Resolve(l, missing), right = Resolve(r, missing);
                            // Only one side can be absent, so "infinite" is never equal.
                            return !left.infinite && !right.infinite && left.value == right.value;
                          });
}

std::pair<Resource, Resource> Resource::Diff(const Resource& rr, DimensionDefault missing) const {
  Resource increased, decreased;
  if (milli_cpu_ > rr.milli_cpu_) {
    increased.milli_cpu_ = SatSub(milli_cpu_, rr.milli_cpu_);
  } else {
    decreased.milli_cpu_ = SatSub(rr.milli_cpu_, milli_cpu_);
  }
  if (memory_ > rr.memory_) {
    increased.memory_ = SatSub(memory_, rr.memory_);
  } else {
    decreased.memory_ = SatSub(rr.memory_, memory_);
  }
  // Ids come in increasing order, so each SetScalar appends.
  ForEachDimension(scalars_begin(), scalars_end(), rr.scalars_begin(), rr.scalars_end(),
                   [&](uint32_t id, const int64_t* l, const int64_t* r) {
                     const Side left = Resolve(l, missing), right = Resolve(r, missing);
                     if (left.infinite) {
                       increased.SetScalar(id, kInfiniteValue);
                     } else if (right.infinite) {
                       decreased.SetScalar(id, kInfiniteValue);
                     } else if (left.value > right.value) {
                       increased.SetScalar(id, SatSub(left.value, right.value));
                     } else {
                       // Like Volcano, an unchanged dimension shows up as decreased by 0.
                       decreased.SetScalar(id, SatSub(right.value, left.value));
                     }
                     return true;
                   });
  return {std::move(increased), std::move(decreased)};
}

std::string Resource::InsufficientDimensions(const Resource& available) const {
  std::vector<std::string_view> names;
  if (milli_cpu_ > available.milli_cpu_) names.push_back("cpu");
  if (memory_ > available.memory_) names.push_back("memory");
  const size_t fixed = names.size();
  ForEachDimension(scalars_begin(), scalars_end(), available.scalars_begin(), available.scalars_end(),
                   [&](uint32_t id, const int64_t* l, const int64_t* r) {
                     if ((l ? *l : 0) > (r ? *r : 0)) names.push_back(ResourceNames::Name(id));
                     return true;
                   });
  // Scalars by name, so messages do not depend on the order names were interned in.
  std::sort(names.begin() + static_cast<std::ptrdiff_t>(fixed), names.end());
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

bool operator==(const Resource& a, const Resource& b) {
  return a.milli_cpu_ == b.milli_cpu_ && a.memory_ == b.memory_ && a.max_task_num_ == b.max_task_num_ &&
         a.size_ == b.size_ &&
         std::equal(a.scalars_begin(), a.scalars_end(), b.scalars_begin(),
                    [](const Resource::Scalar& x, const Resource::Scalar& y) {
                      return x.id == y.id && x.value == y.value;
                    });
}

std::string Resource::ToString() const {
  // Integers printed with Volcano's "%0.2f" look; exact even for values a double cannot hold.
  std::string out = "cpu " + std::to_string(milli_cpu_) + ".00, memory " + std::to_string(memory_) + ".00";
  std::vector<std::pair<std::string_view, int64_t>> scalars;
  scalars.reserve(static_cast<size_t>(size_));
  for (const Scalar* s = scalars_begin(); s != scalars_end(); ++s) {
    scalars.emplace_back(ResourceNames::Name(s->id), s->value);
  }
  std::sort(scalars.begin(), scalars.end());
  for (const auto& [name, value] : scalars) {
    out += ", ";
    out += name;
    out += ' ';
    out += std::to_string(value);
    out += ".00";
  }
  return out;
}

}  // namespace volcache

#pragma once
// Resource: an exact, fixed-point amount of compute resources, with Volcano's semantics.
//
// Dimensions and internal units:
//   cpu            milli-cores (int64)
//   memory         bytes (int64)
//   scalars        by interned name (ResourceNames): extended resources (`nvidia.com/gpu`),
//                  `hugepages-*`, `ephemeral-storage`, `attachable-volumes-*`, in milli-units
//                  (`nvidia.com/gpu: 1` is 1000); the scalar `pods` is a plain count.
//   max_task_num   only meaningful on node allocatable (`pods: N` sets it to N).
//
// Volcano keeps float64 with a 0.1 tolerance; all our units are integers, so
// "|l - r| < 0.1" is exactly "l == r" and every comparison below is exact and keeps
// Volcano's published semantics (tables in tests/api/resource_test.cc).
//
// Missing dimensions: a scalar present on one side only counts as zero on the other side
// (DimensionDefault::kZero) or as infinite (kInfinity), where the caller says so. cpu and
// memory are always present (zero by default).
//
// Layout: cpu and memory inline; scalars in a small sorted array, inline up to
// kInlineScalars entries (no heap allocation for typical pods/nodes), so copying a Resource
// is a couple of cache lines.
//
// Thread-safety: value type; ResourceNames is safe for concurrent use.

#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "api/status.h"

namespace volcache {

// Interned scalar resource names. Ids are small, dense and stable for the life of the
// process. Safe for concurrent use.
class ResourceNames {
 public:
  static constexpr uint32_t kPods = 0;  // "pods" is always id 0
  static uint32_t Intern(std::string_view name);
  // Returns the id or -1 if the name was never interned.
  static int64_t Find(std::string_view name);
  static const std::string& Name(uint32_t id);
};

enum class DimensionDefault : uint8_t { kZero, kInfinity };

// Which resource names volcache accounts (Volcano's IsScalarResourceName rule).
enum class ResourceKind : uint8_t { kCpu, kMemory, kPods, kScalar, kIgnored };
ResourceKind ClassifyResourceName(std::string_view name);

class Resource {
 public:
  // Packed to 12 bytes (the value is read unaligned; x86-64 and AArch64 do so at full
  // speed): a Resource with its two inline scalars is 48 bytes, and a TaskInfo 80. A pod's
  // request holds `pods` and at most one more scalar (a GPU) in nearly every cluster; a third
  // scalar (ephemeral-storage, RDMA, ...) moves them to the heap.
  struct __attribute__((packed)) Scalar {
    uint32_t id;
    int64_t value;
  };
  static constexpr int kInlineScalars = 2;
  // Value used by Volcano (-1) to mark an infinite dimension inside Diff results.
  static constexpr int64_t kInfiniteValue = -1;

  Resource() = default;
  Resource(int64_t milli_cpu, int64_t memory) : milli_cpu_(milli_cpu), memory_(memory) {}
  // Test/convenience constructor: scalars by name in internal units.
  Resource(int64_t milli_cpu, int64_t memory,
           std::initializer_list<std::pair<std::string_view, int64_t>> scalars);
  Resource(const Resource& other);
  Resource& operator=(const Resource& other);
  // A moved-from Resource keeps cpu/memory/max_task_num and has no scalars.
  Resource(Resource&& other) noexcept;
  Resource& operator=(Resource&& other) noexcept;
  ~Resource();

  // An empty Resource (zero everywhere, no scalars), for accessors of optional quantities.
  static const Resource& Zero();

  int64_t milli_cpu() const { return milli_cpu_; }
  int64_t memory() const { return memory_; }
  int32_t max_task_num() const { return max_task_num_; }
  void set_milli_cpu(int64_t v) { milli_cpu_ = v; }
  void set_memory(int64_t v) { memory_ = v; }
  void set_max_task_num(int32_t v) { max_task_num_ = v; }

  // Scalars: Get returns 0 when absent; Has tells whether the dimension is present.
  // Get(name) also answers "cpu" and "memory" (like Volcano's Get) and never interns.
  int64_t Get(uint32_t id) const;
  int64_t Get(std::string_view name) const;
  bool Has(uint32_t id) const;
  void SetScalar(uint32_t id, int64_t value);  // present even when value is 0
  void SetScalar(std::string_view name, int64_t value) { SetScalar(ResourceNames::Intern(name), value); }
  void AddScalar(uint32_t id, int64_t delta);
  void AddScalar(std::string_view name, int64_t delta) { AddScalar(ResourceNames::Intern(name), delta); }
  void RemoveScalar(uint32_t id);
  int scalar_count() const { return size_; }
  // Sorted by id.
  const Scalar* scalars_begin() const;
  const Scalar* scalars_end() const { return scalars_begin() + size_; }

  // All dimensions zero (absent scalars count as zero; negative counts as zero like Volcano's
  // "< 0.1"). The scalar `pods` is ignored, as in Volcano: every task request carries pods=1.
  bool IsEmpty() const;
  // Volcano IsZero(name): the named dimension is below the 0.1 tolerance, i.e. <= 0. An absent
  // scalar is zero (Volcano asserts instead).
  bool IsZero(std::string_view name) const;

  // Arithmetic (in place, returning *this like Volcano). Saturates at the int64 bounds;
  // max_task_num is never touched (Volcano: "should NOT be accounted in other operators").
  // Scalars of rr absent in *this are added (Add/Sub/FitDelta/SetMax).
  Resource& Add(const Resource& rr);
  // Volcano asserts rr.LessEqual(*this, Zero) first; we return FailedPrecondition naming the
  // short dimensions and leave *this unchanged instead.
  Status Sub(const Resource& rr);
  // Subtraction without the sufficiency check (results may go negative).
  Resource& SubUnchecked(const Resource& rr);
  // Multiplies every dimension by ratio, rounding to nearest.
  Resource& Multi(double ratio);
  // Per-dimension max; scalars present only in rr are added.
  Resource& SetMax(const Resource& rr);
  // Per-dimension min over dimensions present in both (Volcano MinDimensionResource with
  // the given default for dimensions missing in rr: kZero → 0, kInfinity → unchanged).
  Resource& MinDimension(const Resource& rr, DimensionDefault missing);
  // Volcano FitDelta: for each dimension with rr > 0, *this -= rr + epsilon, where epsilon
  // is Volcano's 0.1 tolerance. With integer units we subtract one extra unit instead, which
  // keeps the exact sign semantics ("any dimension < 0 means insufficient", and equal
  // amounts are insufficient exactly as in Volcano).
  Resource& FitDelta(const Resource& rr);

  // Comparisons with Volcano's semantics. Every scalar present on either side takes part; an
  // absent one is 0 (kZero) or infinite (kInfinity). Infinite on the right satisfies any
  // "l <= r" / "l < r"; infinite on the left never does (LessEqual/Less fail, the *Partly
  // forms skip it); Equal never holds for a dimension that is infinite on one side.
  bool LessEqual(const Resource& rr, DimensionDefault missing) const;
  bool Less(const Resource& rr, DimensionDefault missing) const;
  bool LessPartly(const Resource& rr, DimensionDefault missing) const;
  bool LessEqualPartly(const Resource& rr, DimensionDefault missing) const;
  bool Equal(const Resource& rr, DimensionDefault missing) const;
  // Returns (increased, decreased): per dimension, how much *this exceeds rr and how much
  // rr exceeds *this. With kInfinity, a dimension infinite on one side is kInfiniteValue.
  // Like Volcano, an unchanged scalar appears in `decreased` with value 0.
  std::pair<Resource, Resource> Diff(const Resource& rr, DimensionDefault missing) const;

  // Names of dimensions where *this is greater than `available` (for fit errors), joined
  // with ", ": cpu, memory, then scalars sorted by name (absent = 0), e.g.
  // "cpu, memory, nvidia.com/gpu"; empty when *this fits.
  std::string InsufficientDimensions(const Resource& available) const;

  // Exact structural equality (cpu, memory, max_task_num, same present scalars, same values).
  friend bool operator==(const Resource& a, const Resource& b);

  // e.g. "cpu 1000.00, memory 2147483648.00, nvidia.com/gpu 1000.00" like Volcano; scalars
  // sorted by name.
  std::string ToString() const;

 private:
  Scalar* data() { return capacity_ > kInlineScalars ? heap_ : inline_; }
  const Scalar* data() const { return capacity_ > kInlineScalars ? heap_ : inline_; }
  void CopyScalarsFromHeap(const Resource& other);  // the copy constructor's rare half
  Scalar* Insert(uint32_t id);                      // returns the (possibly new, value 0) entry
  template <typename Op>
  void MergeScalars(const Resource& rr, Op op);  // Add's and SubUnchecked's scalars
  void Reserve(int n);

  int64_t milli_cpu_ = 0;
  int64_t memory_ = 0;
  int32_t max_task_num_ = 0;
  int16_t size_ = 0;
  int16_t capacity_ = kInlineScalars;  // > kInlineScalars ⇒ heap_ is in use
  union {
    Scalar inline_[kInlineScalars];
    Scalar* heap_;
  };
};

// Copies and moves are inline: every task copy (a snapshot's deep copy, the cache's two
// entries per task) makes one. The inline array is copied whole, a fixed 36 bytes the
// compiler moves in a few instructions instead of a call to memmove for `size_` entries;
// the entries past size_ are never read.
inline Resource::Resource(const Resource& other)
    : milli_cpu_(other.milli_cpu_), memory_(other.memory_), max_task_num_(other.max_task_num_) {
  if (other.capacity_ > kInlineScalars) {
    CopyScalarsFromHeap(other);
  } else {
    std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(inline_));
    size_ = other.size_;
  }
}

inline Resource::Resource(Resource&& other) noexcept
    : milli_cpu_(other.milli_cpu_), memory_(other.memory_), max_task_num_(other.max_task_num_) {
  if (other.capacity_ > kInlineScalars) {
    heap_ = other.heap_;
    capacity_ = other.capacity_;
    size_ = other.size_;
    other.capacity_ = kInlineScalars;  // other's union is its inline array again
  } else {
    std::memcpy(static_cast<void*>(inline_), other.inline_, sizeof(inline_));
    size_ = other.size_;
  }
  other.size_ = 0;
}

inline Resource::~Resource() {
  if (capacity_ > kInlineScalars) delete[] heap_;
}

}  // namespace volcache

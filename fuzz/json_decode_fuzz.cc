// libFuzzer target for the Kubernetes object decoder (api/k8s/decode.h).
//
// The same bytes go to every entry point that takes untrusted text: a JSON object, a List, a
// watch-stream line, an API Status, a YAML stream and a timestamp. The contract under test is
// "nothing throws, nothing crashes, nothing hangs": each call must return a Result, and a
// successful decode must describe itself (every object has a kind and metadata).
//
// Differential: the JSON entry points (DecodeObject, DecodeList, DecodeWatchEvent) take a
// streaming fast path for Pods; each must answer exactly as the reference DOM decoder does
// (same objects field by field, or the same error). A mismatch aborts with both answers.
//
// Seeds: fuzz/corpus/json_decode/ (small hand-written objects, events and YAML, and
// real-layout pods in watch events and lists).

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "api/k8s/decode.h"
#include "api/k8s/decode_fast.h"
#include "api/k8s/dump.h"

namespace {

void Touch(const volcache::k8s::Object& obj) {
  // Exercise the accessors; a malformed variant would trip ASan/UBSan here.
  const std::string description = volcache::k8s::DescribeObject(obj);
  if (description.empty()) std::abort();
  (void)volcache::k8s::KindOf(obj);
  (void)volcache::k8s::MetaOf(obj).resource_version.str().size();
}

// The public answer and the reference's must be the same.
template <typename R>
void SameAsReference(const char* what, const R& got, const R& want) {
  const std::string a = volcache::k8s::CanonicalDump(got);
  const std::string b = volcache::k8s::CanonicalDump(want);
  if (a == b) return;
  std::fprintf(stderr, "%s differs from the reference decoder:\n  got:  %s\n  want: %s\n", what, a.c_str(),
               b.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  using namespace volcache::k8s;

  auto obj = DecodeObject(text);
  SameAsReference("DecodeObject", obj, DecodeObjectReference(text));
  if (obj.ok()) {
    Touch(*obj);
  } else if (obj.status().message().empty()) {
    std::abort();  // every failure must say why
  }

  auto list = DecodeList(text);
  SameAsReference("DecodeList", list, DecodeListReference(text));
  if (list.ok()) {
    for (const Object& o : list->items) Touch(o);
  }

  auto ev = DecodeWatchEvent(text);
  SameAsReference("DecodeWatchEvent", ev, DecodeWatchEventReference(text));
  if (ev.ok()) {
    (void)WatchEventTypeName(ev->type);
    if (ev->object.has_value()) Touch(*ev->object);
    if (ev->type != WatchEventType::kError && !ev->object.has_value()) std::abort();
  }

  (void)DecodeApiStatus(text);

  if (auto docs = DecodeYamlDocuments(text); docs.ok()) {
    for (const Object& o : *docs) Touch(o);
  } else if (docs.status().message().empty()) {
    std::abort();
  }

  if (size <= 64) (void)ParseTimestamp(text);
  return 0;
}

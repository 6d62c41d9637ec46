#pragma once
// Decoding Kubernetes objects from JSON and YAML (decode_json.cc, decode_yaml.cc; timestamps:
// timestamps.h).
//
// Every function returns a Result: malformed JSON/YAML, a field of the wrong type, an
// invalid quantity or a missing required field (kind, metadata.name) yields InvalidArgument
// with a message naming the object (kind and namespace/name when known) and the field path,
// e.g. `Pod default/web-0: spec.containers[0].resources.requests.cpu: quantity "1x": ...`.
// Nothing throws out of this API. Unknown fields are ignored, as the API server's clients do.
// Inputs larger than kMaxDocumentBytes are refused.
//
// Thread-safety: stateless; safe for concurrent use.

#include <string_view>
#include <vector>

#include "api/k8s/objects.h"
#include "api/k8s/timestamps.h"  // ParseTimestamp, declared here before the split
#include "api/status.h"

namespace volcache::k8s {

inline constexpr size_t kMaxDocumentBytes = 64u << 20;  // 64 MiB

// One object; the kind is taken from `kind` (and `apiVersion` for Volcano kinds).
// Kinds we do not model decode to Unstructured.
Result<Object> DecodeObject(std::string_view json);
Result<Pod> DecodePod(std::string_view json);
Result<Node> DecodeNode(std::string_view json);
Result<PodGroup> DecodePodGroup(std::string_view json);
Result<Queue> DecodeQueue(std::string_view json);
Result<PriorityClass> DecodePriorityClass(std::string_view json);
Result<ResourceQuota> DecodeResourceQuota(std::string_view json);

// A `*List` object; items without their own kind take it from the list kind.
Result<ObjectList> DecodeList(std::string_view json);

// One line of a watch stream: {"type": ..., "object": {...}}.
Result<WatchEvent> DecodeWatchEvent(std::string_view json);

// A Kubernetes Status object (API error bodies).
Result<ApiStatus> DecodeApiStatus(std::string_view json);

// A YAML stream of one or more documents separated by `---` (or a JSON document).
// Empty documents are skipped; List documents are expanded into their items.
Result<std::vector<Object>> DecodeYamlDocuments(std::string_view yaml);

// Reads a file and decodes it: `.json` files as one object or List, `.jsonl` as watch
// events' objects in order, anything else as YAML documents.
Result<std::vector<Object>> DecodeFile(const std::string& path);

}  // namespace volcache::k8s

#pragma once
// Internal to api/k8s: the pieces of the reference decoder shared by its JSON half
// (decode_json.cc) and its YAML/file half (decode_yaml.cc). Callers use decode.h.

#include <fmt/format.h>

#include <exception>
#include <new>
#include <nlohmann/json.hpp>
#include <string_view>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache::k8s::decode_internal {

using json = nlohmann::json;

struct DecodeOptions {
  // For List items that omit kind/apiVersion (the API server's lists do).
  std::string_view default_kind;
  std::string_view default_api_version;
  // Watch bookmarks: the object carries only metadata.resourceVersion. Decoded as
  // Unstructured, with no name or apiVersion required.
  bool bookmark = false;
};

Status TooLarge(size_t size);

// One JSON document (at most kMaxDocumentBytes); a syntax error is InvalidArgument.
Result<json> ParseJson(std::string_view text);

// A `*List` object: kind ends in List and it carries an items array.
bool LooksLikeList(const json& j);

// The reference decoder on a parsed value: one object, one `*List`.
Result<Object> DecodeValue(const json& j, const DecodeOptions& opt);
Result<ObjectList> DecodeListValue(const json& j);

// Runs `fn` and turns any escaping exception into a Status (allocation failure, or a library
// exception this file failed to anticipate): nothing throws out of the decoder.
template <typename T, typename Fn>
Result<T> Guard(Fn&& fn) {
  try {
    return fn();
  } catch (const std::bad_alloc&) {
    return Status::ResourceExhausted("out of memory while decoding");
  } catch (const std::exception& e) {
    return Status::InvalidArgument(fmt::format("decode failed: {}", e.what()));
  }
}

}  // namespace volcache::k8s::decode_internal

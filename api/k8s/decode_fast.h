#pragma once
// The two JSON decoders behind api/k8s/decode.h, exposed for differential tests, fuzzers
// and benchmarks. Callers outside tests use decode.h.
//
// The reference decoder parses the whole document into a nlohmann::json DOM and reads the
// structs from it; it defines the behaviour (results and error messages) of decode.h.
//
// The fast path is a streaming pull parser for the hot objects — Pods and Nodes, alone, in
// watch events (ADDED/MODIFIED/DELETED) and in Lists — that builds the structs directly from the
// text and skips every member it does not read, with no DOM. It handles only what it can
// decode exactly as the reference would: it returns false ("not handled", *out unspecified)
// for any error, any other kind, duplicate members the reference would read, floats,
// BOMs, very deep nesting and kind/apiVersion members after spec/status (or after a List's
// items, or after metadata when they change the kind known before it). The public functions
// then run the reference decoder, which produces the result or the exact error. So decode.h's
// answer never depends on which path ran.
//
// Thread-safety: safe for concurrent use (the only state is per-thread scratch space for
// unescaping). Nothing throws.

#include <string_view>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache::k8s {

// The reference (DOM) decoder: the behaviour of DecodeObject, DecodeList and DecodeWatchEvent.
Result<Object> DecodeObjectReference(std::string_view json);
Result<ObjectList> DecodeListReference(std::string_view json);
Result<WatchEvent> DecodeWatchEventReference(std::string_view json);

// The fast path: true when it decoded `json` into *out, exactly as the reference would.
bool FastDecodeObject(std::string_view json, Object* out);
bool FastDecodeList(std::string_view json, ObjectList* out);
bool FastDecodeWatchEvent(std::string_view json, WatchEvent* out);
// The same, the event's object decoded in place into *object (e.g. one the caller already
// holds in a shared_ptr, so that nothing is moved or destroyed per event).
bool FastDecodeWatchEvent(std::string_view json, WatchEventType* type, Object* object);

}  // namespace volcache::k8s

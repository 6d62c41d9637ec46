#pragma once
// A canonical text of decoded objects: every field of every struct in objects.h, so that two
// values are equal exactly when their dumps are. Used by the decoder's differential test and
// fuzzer to compare the fast path with the reference, and readable when they differ.
//
// Thread-safety: stateless; safe for concurrent use.

#include <string>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache::k8s {

std::string CanonicalDump(const Object& obj);
std::string CanonicalDump(const ObjectList& list);
std::string CanonicalDump(const WatchEvent& ev);
// "ok <dump>" or "error <code>: <message>".
std::string CanonicalDump(const Result<Object>& r);
std::string CanonicalDump(const Result<ObjectList>& r);
std::string CanonicalDump(const Result<WatchEvent>& r);

}  // namespace volcache::k8s

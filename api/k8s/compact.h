#pragma once
// Compacting decoded objects: the parts of a pod that repeat from pod to pod (containers,
// init containers, tolerations, labels, annotations, node selector, owner references,
// conditions) are replaced by equal blocks already held by other pods (hash-consing over
// k8s::Shared, api/k8s/shared.h). A job's pods then hold their containers, labels and
// annotations once (with the Interned strings of api/k8s/interned.h, the decoded pod of the
// standard shapes went from 1,432 to 528 bytes: docs/BENCHMARKS.md, issue 16).
//
// The table holds its blocks weakly: a block leaves the table and is freed with the last
// object holding it. Compacting changes no value: a compacted pod compares equal to the pod
// before.
//
// Thread-safety: thread-safe (one mutex per kind of part; the decoders of different
// reflectors compact concurrently).

#include <cstddef>
#include <string>
#include <string_view>

#include "api/k8s/objects.h"
#include "api/k8s/shared_string.h"

namespace volcache::k8s {

void Compact(Pod* pod);
// A node's capacity, allocatable and conditions.
void Compact(Node* node);

// The same for a key `ns/name` that many objects repeat but that comes and goes (a task's job
// id): an equal string already held, held weakly. Each thread remembers the last key it
// returned, and returns it again without the table's lock when the next key is equal (a
// job's pods arrive together, from a LIST or a controller's creates).
SharedString InternSharedKey(std::string_view ns, std::string_view name);
// A whole key, interned as InternSharedKey's (a job's own id, so that the JobInfo and its
// tasks hold one string).
SharedString InternShared(std::string_view key);

// Entries held by the tables (every one a block some object holds), for tests and /debug.
size_t CompactTableEntries();
// Their slots (8 bytes each): a table doubles when 7/8 full and halves when under 7/32 full.
size_t CompactTableSlots();

}  // namespace volcache::k8s

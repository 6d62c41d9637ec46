#pragma once
// `volcache bench constraints --shape L --kind anti-affinity|pod-affinity|node-affinity|spread|mixed`:
// the session placing pending pods that carry placement constraints on a standard shape.
// The shape's running pods stay (the load the constraints count against); its pending jobs
// are replaced by 500 gangs of 10 pods (cpu 1, memory 2Gi) of the kind, and every node gets a
// zone label (topology.kubernetes.io/zone, 50 zones by node index). Kinds, per gang j:
//   anti-affinity  required pod anti-affinity to its own gang's label per hostname
//   pod-affinity   required pod affinity to its own gang's label per zone (the first pod of a
//                  gang goes anywhere, the rest follow its zone)
//   node-affinity  required node affinity zone In [zone j%50, zone (j+1)%50], preferred j%50
//   spread         a DoNotSchedule topology spread, maxSkew 1 over zones, of its own gang
//   mixed          the four above and plain gangs, in turn
// Each run times Allocate on the kind's snapshot and then on the same shape with plain pending
// gangs (alternated), and prints one JSON line per kind: pods_per_s (placements over the
// median Allocate time), the plain figure beside it, and their ratio.
// Thread-safety: runs on the calling thread.

#include <iosfwd>

#include "bench/runner.h"

namespace volcache::bench {

int Constraints(const BenchOptions& options, std::ostream& out, std::ostream& err);

}  // namespace volcache::bench

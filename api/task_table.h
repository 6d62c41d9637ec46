#pragma once
// TaskTable: the tasks of one job (keyed by uid) or one node (keyed by "namespace/name"),
// flat (api/keyed_table.h).
//
// Pointers and iterators into the table are valid until the next insertion or erasure (as for
// a std::vector); an entry's task can be changed in place through the table's owner.

#include "api/keyed_table.h"
#include "api/task_info.h"

namespace volcache {

extern template class KeyedTable<TaskInfo>;
using TaskTable = KeyedTable<TaskInfo>;

}  // namespace volcache

#include "api/task_table.h"

#include "api/keyed_table_impl.h"

namespace volcache {

template class KeyedTable<TaskInfo>;

}  // namespace volcache

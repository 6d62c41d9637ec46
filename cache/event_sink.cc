#include "cache/event_sink.h"

namespace volcache {

EventSink::~EventSink() = default;

}  // namespace volcache

#pragma once
// Decoding from an already-parsed nlohmann::json value (used by the replay reader, which
// parses a line once and decodes its "object" member). Same contract as decode.h.

#include <nlohmann/json_fwd.hpp>

#include "api/k8s/objects.h"
#include "api/status.h"

namespace volcache::k8s {

Result<Object> DecodeObjectJson(const nlohmann::json& j);

}  // namespace volcache::k8s

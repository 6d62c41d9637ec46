// Uses the installed headers and libraries: parses a quantity, builds a resource and
// registers a pre-binder, then checks the results.
#include <cstdio>
#include <memory>

#include "api/quantity.h"
#include "api/resource.h"
#include "binder/binder.h"

namespace {
class NoopPreBinder : public volcache::PreBinder {
 public:
  std::string_view Name() const override { return "noop"; }
  volcache::Status PreBind(volcache::BindContext&) override { return volcache::Status::Ok(); }
  void PreBindRollBack(volcache::BindContext&) override {}
};
}  // namespace

int main() {
  auto q = volcache::Quantity::Parse("1536Mi");
  if (!q.ok() || q->Value() != 1536ll * 1024 * 1024) {
    std::fprintf(stderr, "quantity parse failed\n");
    return 1;
  }
  volcache::Resource r(1000, q->Value(), {{"nvidia.com/gpu", 1000}});
  volcache::PreBinderRegistry registry;
  if (!registry.Register(std::make_shared<NoopPreBinder>()).ok()) return 1;
  std::printf("volcache consumer ok: %s, %zu pre-binder(s)\n", r.ToString().c_str(), registry.size());
  return 0;
}

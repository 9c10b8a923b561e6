#pragma once
// Abstract resources, as Dask's worker resources: a worker declares what it has
// (`taskwire-worker --resources "GPU=2,MEM=64e9"`), a task what it consumes while it runs
// (SubmitOptions::resources). Names mean nothing to taskwire; only amounts are compared.
// Scheduler and worker each keep their own account of what is in use (see
// docs/scheduling.md, "Resources and restrictions").
#include <map>
#include <string>
#include <string_view>

namespace taskwire::runtime {

/// Name -> amount. Amounts are positive (a zero or negative one is refused by parsing).
using Resources = std::map<std::string, double>;

/// "GPU=2,MEM=64e9" (spaces around names and values allowed; empty: none). Throws
/// std::invalid_argument naming `what` (e.g. "--resources") and the bad part.
Resources parse_resources(std::string_view text, std::string_view what = "resources");
/// Throws std::invalid_argument unless every name is non-empty and every amount positive.
void check_resources(const Resources& resources, std::string_view what = "resources");
/// "GPU=2, MEM=6.4e+10" (for logs and messages); "none" when empty.
std::string format_resources(const Resources& resources);

/// Whether `need` fits in what `total` has beyond `used` (a name missing from `total` has 0).
bool resources_fit(const Resources& need, const Resources& total, const Resources& used = {});
/// used += need (sign 1) or used -= need (sign -1); a name whose use falls to 0 is dropped.
void account_resources(Resources& used, const Resources& need, int sign);

}  // namespace taskwire::runtime

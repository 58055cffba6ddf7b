// Debian's libtorch-dev ships torch/csrc/profiler/collection.h, which includes libkineto's
// <ActivityType.h>, but not libkineto. The tests read PyTorch's event tree through that header
// and never use the type: its name is enough (libkineto's enum is an int, as this one).
#pragma once

namespace libkineto {
enum class ActivityType : int {};
}  // namespace libkineto

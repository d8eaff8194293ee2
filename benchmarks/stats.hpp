#pragma once
/// @file stats.hpp
/// Summary statistics of repeated benchmark measurements (the library's, in bench's namespace).

#include "conflux/core/stats.hpp"

namespace conflux::bench {

using ::conflux::median;

}  // namespace conflux::bench

#pragma once
/// @file json.hpp
/// The pieces of JSON conflux writes (metrics lines, summaries, timelines, benchmark results).

#include <string>
#include <string_view>

namespace conflux {

/// JSON string literal (with quotes) for `text`.
std::string json_string(std::string_view text);

/// JSON number for `value`; `null` for NaN and infinities, which JSON cannot hold.
std::string json_number(double value);

}  // namespace conflux

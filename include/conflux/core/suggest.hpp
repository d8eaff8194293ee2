#pragma once
/// @file suggest.hpp
/// "Did you mean" hints for misspelt names.

#include <string>
#include <string_view>
#include <vector>

namespace conflux {

/// Levenshtein distance between two strings.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is close enough to be a plausible typo (distance at
/// most max(2, len/3)), else an empty string. Never `word` itself.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// "; did you mean 'x'?" or "" when nothing is close.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace conflux

#include "conflux/core/suggest.hpp"

#include <gtest/gtest.h>

namespace conflux {
namespace {

TEST(Suggest, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("train.lr", "train.lr"), 0u);
}

TEST(Suggest, ClosestMatchOnlyWhenPlausible) {
  const std::vector<std::string> keys = {"train.lr", "train.epochs", "train.batch_size"};
  EXPECT_EQ(closest_match("train.epoch", keys), "train.epochs");
  EXPECT_EQ(closest_match("completely.different", keys), "");
  EXPECT_EQ(did_you_mean("train.lrr", keys), "; did you mean 'train.lr'?");
}

TEST(Suggest, NeverSuggestsTheWordItself) {
  // A name that is among the candidates was refused for another reason (e.g. model.layers
  // given to --set); "did you mean" the same name would only confuse.
  const std::vector<std::string> keys = {"model.layers", "train.lr"};
  EXPECT_EQ(closest_match("model.layers", keys), "");
  EXPECT_EQ(did_you_mean("model.layers", keys), "");
  EXPECT_EQ(did_you_mean("train.lr", {"train.lr", "train.l"}), "; did you mean 'train.l'?");
}

}  // namespace
}  // namespace conflux

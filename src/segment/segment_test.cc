#include <gtest/gtest.h>
TEST(Segment, Placeholder) {}

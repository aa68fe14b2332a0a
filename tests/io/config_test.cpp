// Config's typed reads: what converts, and what throws naming the value.
#include "api/io/config.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

namespace tower {
namespace {

std::string error_of(const Config& c) {
  try {
    c.as_int();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Config, AsIntTakesWholeNumbersInRangeAndNamesTheOthers) {
  EXPECT_EQ(Config(3.0).as_int(), 3);
  EXPECT_EQ(Config(-9223372036854775808.0).as_int(), std::numeric_limits<std::int64_t>::min());
  for (double d : {1e30, -1e30, 9223372036854775808.0}) {
    const std::string m = error_of(Config(d));
    EXPECT_NE(m.find("outside the 64-bit integer range"), std::string::npos) << m;
    EXPECT_EQ(m.find("-9223372036854775808"), std::string::npos) << m;
  }
  EXPECT_NE(error_of(Config(1e30)).find("e+30"), std::string::npos) << error_of(Config(1e30));
  EXPECT_NE(error_of(Config(2.5)).find("expected an int, got float 2.5"), std::string::npos) << error_of(Config(2.5));
  EXPECT_NE(error_of(Config(std::numeric_limits<double>::infinity())).find("expected an int"), std::string::npos);
}

}  // namespace
}  // namespace tower

#include "api/data/text_lines.h"

#include <gtest/gtest.h>

#include <stdexcept>

#include "tests/testing/fixtures.h"

namespace tower::data {
namespace {

std::string text_file(const std::string& name) {
  return (tower::testing::reference_dir() / "data/text" / name).string();
}

TEST(TextLinesTest, ReadsFilesAsTextLineDataset) {
  const Config doc = tower::testing::read_json_fixture("data/text/text_fixtures.json");
  for (const Config& c : doc.at("text_lines").as_list()) {
    std::vector<std::string> paths, expected;
    for (const Config& f : c.at("files").as_list()) paths.push_back(text_file(f.as_string()));
    for (const Config& l : c.at("lines").as_list()) expected.push_back(l.as_string());
    SCOPED_TRACE(c.at("files").to_json());
    EXPECT_EQ(read_text_lines(paths), expected);
  }
}

TEST(TextLinesTest, AMissingFileIsNamed) {
  const std::string missing = text_file("no_such_file.txt");
  try {
    (void)read_text_lines({text_file("corpus.txt"), missing});
    FAIL() << "nothing thrown";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot open '" + missing + "'"), std::string::npos) << e.what();
  }
  const std::string folder = (tower::testing::reference_dir() / "data/text").string();
  try {
    (void)read_text_lines({folder});
    FAIL() << "nothing thrown";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'" + folder + "' is a directory"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tower::data

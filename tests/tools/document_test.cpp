#include "tools/experiment/document.h"

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "tests/tools/tools_testing.h"

namespace tower::experiment {
namespace {

using testing::expect_error_at;

TEST(Document, ScalarsFollowTheYamlCoreSchema) {
  const Document d = Document::parse(R"(
ints: [12, -3, 0x1F, 0o17]
floats: [0.5, 1e-3, -2.5E+2, .inf, -.inf]
nan: .nan
bools: [true, False]
nulls: [~, null, ]
strings: [relu, "12", 'true', yes, 1.2.3, ""]
)",
                                     "t.yaml");
  const Config& r = d.root();
  EXPECT_EQ(r.at("ints"), Config(Config::List{12, -3, 31, 15}));
  const auto& f = r.at("floats").as_list();
  EXPECT_TRUE(f[0].is_number() && !f[0].is_int());
  EXPECT_DOUBLE_EQ(f[0].as_double(), 0.5);
  EXPECT_DOUBLE_EQ(f[1].as_double(), 1e-3);
  EXPECT_DOUBLE_EQ(f[2].as_double(), -250.0);
  EXPECT_TRUE(std::isinf(f[3].as_double()) && f[3].as_double() > 0);
  EXPECT_TRUE(std::isinf(f[4].as_double()) && f[4].as_double() < 0);
  EXPECT_TRUE(std::isnan(r.at("nan").as_double()));
  EXPECT_EQ(r.at("bools"), Config(Config::List{true, false}));
  for (const Config& n : r.at("nulls").as_list()) EXPECT_TRUE(n.is_null());
  const auto& s = r.at("strings").as_list();
  ASSERT_EQ(s.size(), 6u);
  for (const Config& v : s) EXPECT_TRUE(v.is_string()) << v.to_json();
  EXPECT_EQ(s[1].as_string(), "12");    // quoted numbers stay strings
  EXPECT_EQ(s[2].as_string(), "true");  // so do quoted booleans
  EXPECT_EQ(s[3].as_string(), "yes");   // YAML 1.2: not a bool
}

TEST(Document, RemembersWhereEveryKeyAndValueIs) {
  const Document d = Document::parse("fit:\n  epochs: 3\nmodel:\n  layers:\n    - {type: Dense, units: 4}\n"
                                     "    - type: Softmax\n",
                                     "exp.yaml");
  EXPECT_EQ(d.key_mark("fit.epochs").to_string(), "exp.yaml:2:3");
  EXPECT_EQ(d.value_mark("fit.epochs").to_string(), "exp.yaml:2:11");
  EXPECT_EQ(d.value_mark("model.layers[0]").to_string(), "exp.yaml:5:7");
  EXPECT_EQ(d.key_mark("model.layers[0].units").to_string(), "exp.yaml:5:21");
  EXPECT_EQ(d.value_mark("model.layers[1].type").to_string(), "exp.yaml:6:13");
  // A path that is not there falls back to its nearest ancestor.
  EXPECT_EQ(d.value_mark("model.layers[1].units").to_string(), "exp.yaml:6:7");
  EXPECT_EQ(d.value_mark("nothing.at.all").to_string(), "exp.yaml:1:1");
}

TEST(Document, SyntaxErrorsAndDuplicateKeysPointAtTheFile) {
  expect_error_at([] { Document::parse("fit:\n  epochs: [1, 2\n", "bad.yaml"); }, "bad.yaml", 3, 1, {"YAML syntax error"});
  expect_error_at([] { Document::parse("fit:\n  epochs: 1\n  epochs: 2\n", "dup.yaml"); }, "dup.yaml", 3, 3,
                  {"duplicate key 'epochs'", "first at dup.yaml:2:3"});
  expect_error_at([] { Document::parse("- a\n- b\n", "list.yaml"); }, "list.yaml", 1, 1, {"a map of sections"});
  expect_error_at([] { Document::parse("? [a, b]\n: 1\n", "key.yaml"); }, "key.yaml", 1, 3, {"map key"});
  expect_error_at([] { Document::parse("fit:\n  a.b: 1\n", "dot.yaml"); }, "dot.yaml", 2, 3, {"cannot hold '.'"});
  expect_error_at([] { Document::load_file("/nonexistent/exp.yaml"); }, "/nonexistent/exp.yaml", 0, 0,
                  {"cannot open the experiment file"});
}

// Hardening (tests/fuzz): aliases of aliases ("billion laughs") would expand to 9^9 values; the reader stops at
// kMaxValues with an error at the value where it stopped, instead of running out of memory.
TEST(Document, AliasesThatExpandTooFarAreRefused) {
  std::string text = "l0: &l0 [x, x, x, x, x, x, x, x, x]\n";
  for (int i = 1; i <= 8; ++i) {
    const std::string prev = "*l" + std::to_string(i - 1);
    text += "l" + std::to_string(i) + ": &l" + std::to_string(i) + " [" + prev;
    for (int k = 1; k < 9; ++k) text += ", " + prev;
    text += "]\n";
  }
  expect_error_at([&] { Document::parse(text, "laughs.yaml"); }, "laughs.yaml", 0, 0,
                  {"laughs.yaml:", "more than 100000 values", "aliases"});
  // A few aliases, as experiment files use them, are fine.
  const Document d = Document::parse("a: &a {units: 8}\nb: [*a, *a]\n", "ok.yaml");
  EXPECT_EQ(d.root().at("b").as_list()[1].at("units").as_int(), 8);
}

TEST(Document, OverridesParseTheirValueAsYamlAndCreateMissingMaps) {
  Document d = Document::parse("fit: {epochs: 3}\nmodel:\n  layers:\n    - {type: Dense, units: 4}\n", "e.yaml");
  d.apply_override("fit.epochs=1");
  d.apply_override("fit.validation.freq=2");
  d.apply_override("model.layers.0.units=16");
  d.apply_override("model.layers[0].activation=relu");
  d.apply_override("data.preprocessing=[{type: rescale, scale: 0.5}]");
  EXPECT_EQ(d.root().at("fit").at("epochs"), Config(1));
  EXPECT_EQ(d.root().at("fit").at("validation").at("freq"), Config(2));
  EXPECT_EQ(d.root().at("model").at("layers").as_list()[0].at("units"), Config(16));
  EXPECT_EQ(d.root().at("model").at("layers").as_list()[0].at("activation"), Config("relu"));
  EXPECT_DOUBLE_EQ(d.root().at("data").at("preprocessing").as_list()[0].at("scale").as_double(), 0.5);
  EXPECT_EQ(d.value_mark("fit.epochs").to_string(), "--set fit.epochs=1");
  EXPECT_EQ(d.value_mark("model.layers[0].type").to_string(), "e.yaml:4:14");

  expect_error_at([&] { d.apply_override("fit.epochs"); }, "--set fit.epochs", 0, 0, {"key.path=value"});
  expect_error_at([&] { d.apply_override("model.layers.3.units=1"); }, "--set model.layers.3.units=1", 0, 0,
                  {"model.layers[3]"});
  expect_error_at([&] { d.apply_override("fit.epochs.x=1"); }, "--set fit.epochs.x=1", 0, 0, {"not a map"});
  expect_error_at([&] { d.apply_override("fit.epochs=[1"); }, "--set fit.epochs=[1", 0, 0, {"not valid YAML"});
}

TEST(Document, ToYamlReadsBackToTheSameConfig) {
  const std::string text = R"(
name: "true"
seed: 42
lr: 0.001
values: [1, 2.5, -3, .inf]
nested: {a: [], b: {}, c: null, d: "", e: "12", f: [[1, 2], [3, 4]]}
list:
  - {type: Dense, units: 4}
  - text with: colon
)";
  const Document d = Document::parse(text, "a.yaml");
  const Document back = Document::parse(d.to_yaml(), "b.yaml");
  EXPECT_EQ(back.root(), d.root()) << d.to_yaml();
  EXPECT_EQ(back.root().at("lr").as_double(), 0.001);
  EXPECT_NE(d.to_yaml().find("lr: 0.001\n"), std::string::npos) << d.to_yaml();
}

}  // namespace
}  // namespace tower::experiment

#include "api/io/weights_file.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "testing/layer_test.h"

namespace tower {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("tower_weights_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

Sequential small_model(int hidden = 5) {
  return Sequential({InputLayer({.shape = {3}}), layers::Dense({.units = hidden, .activation = "relu"}),
                     layers::Dense({.units = 2})});
}

std::string read_all(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void expect_error_mentions(const std::function<void()>& fn, const std::vector<std::string>& words) {
  try {
    fn();
    ADD_FAILURE() << "expected an exception";
  } catch (const std::exception& e) {
    for (const std::string& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
}

TEST(WeightsFile, RoundTripIsExact) {
  const fs::path p = temp_dir() / "m.weights";
  Sequential a = small_model(), b = small_model();
  a.save_weights(p);
  b.load_weights(p);
  const auto wa = a.get_weights(), wb = b.get_weights();
  ASSERT_EQ(wa.size(), wb.size());
  for (std::size_t i = 0; i < wa.size(); ++i) EXPECT_EQ(wa[i].to_vector(), wb[i].to_vector());
}

TEST(WeightsFile, WholeModelSaveAndLoad) {
  const fs::path p = temp_dir() / "model.tower";
  Sequential a = small_model();
  a.save(p);
  Model b = Model::load(p);
  EXPECT_EQ(b->type(), "Sequential");
  EXPECT_EQ(b.count_params(), a.count_params());
  Tensor x = testing::random_tensor({4, 3}, 1);
  testing::expect_near(b.predict(x), a.predict(x), 0.f, 0.f, "predictions");
}

TEST(WeightsFile, AFileFromAnotherModelNamesBothShapes) {
  const fs::path p = temp_dir() / "other.weights";
  small_model(7).save_weights(p);
  Sequential m = small_model(5);
  const auto before = m.get_weights();
  expect_error_mentions([&] { m.load_weights(p); }, {p.string(), "(3, 7)", "(3, 5)"});
  EXPECT_EQ(m.get_weights()[0].to_vector(), before[0].to_vector());  // unchanged
}

TEST(WeightsFile, TruncatedAndCorruptedFilesAreRejected) {
  const fs::path dir = temp_dir();
  const fs::path good = dir / "good.weights";
  small_model().save_weights(good);
  const std::string bytes = read_all(good);
  std::ofstream(dir / "truncated.weights", std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  std::string flipped = bytes;
  flipped[flipped.size() - 20] ^= 0x55;
  std::ofstream(dir / "corrupt.weights", std::ios::binary) << flipped;
  std::ofstream(dir / "text.weights") << "hello";
  Sequential m = small_model();
  expect_error_mentions([&] { m.load_weights(dir / "truncated.weights"); }, {"truncated.weights", "truncated"});
  expect_error_mentions([&] { m.load_weights(dir / "corrupt.weights"); }, {"corrupt.weights", "checksum"});
  expect_error_mentions([&] { m.load_weights(dir / "text.weights"); }, {"text.weights", "not a Tower weights file"});
  expect_error_mentions([&] { m.load_weights(dir / "missing.weights"); }, {"missing.weights"});
}

// A Tower weights file around `json` and `data`, with a correct checksum, as a damaged writer could produce.
std::string weights_file_bytes(const std::string& json, const std::string& data) {
  const auto le = [](std::uint64_t v, int bytes) {
    std::string out;
    for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xFF));
    return out;
  };
  std::string out = "TOWERWTS" + le(1, 4) + le(json.size(), 8) + json + le(data.size(), 8) + data;
  return out + le(io::crc32(out.data(), out.size()), 4);
}

// Found by fuzzing (tests/fuzz): every size, shape and offset of a file that passes its checksum is checked
// against the file before anything is allocated or copied, and the error names the file and the field.
TEST(WeightsFile, HeaderFieldsAreCheckedAgainstTheFile) {
  const fs::path path = temp_dir() / "crafted.weights";
  const auto error_for = [&](const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
    try {
      io::read_weights_file(path.string());
    } catch (const std::runtime_error& e) {
      return std::string(e.what());
    }
    return std::string("(no exception)");
  };
  const auto expect_has = [&](const std::string& msg, const std::vector<std::string>& words) {
    EXPECT_NE(msg.find(path.string()), std::string::npos) << msg;
    for (const std::string& w : words) EXPECT_NE(msg.find(w), std::string::npos) << "'" << w << "' not in: " << msg;
  };
  const std::string eight(8, '\0');
  const auto one_weight = [](const std::string& shape, const std::string& offset) {
    return R"({"weights":[{"name":"w","shape":)" + shape + R"(,"offset":)" + offset + "}]}";
  };
  // 10^18 floats announced, 8 bytes present: refused before allocating.
  expect_has(error_for(weights_file_bytes(one_weight("[1000000000,1000000000]", "0"), eight)),
             {"weight 'w'", "(1000000000, 1000000000)", "outside the 8 bytes of data"});
  expect_has(error_for(weights_file_bytes(one_weight("[4294967296,4294967296,4294967296]", "0"), eight)),
             {"weight 'w'", "outside"});
  // A negative offset once wrapped around and read before the data.
  expect_has(error_for(weights_file_bytes(one_weight("[2]", "-8"), eight)), {"weight 'w'", "offset -8", "outside"});
  expect_has(error_for(weights_file_bytes(one_weight("[2]", "4"), eight)), {"offset 4", "outside"});
  expect_has(error_for(weights_file_bytes(one_weight("[-2]", "0"), eight)), {"weight 'w'", "negative dimension -2"});
  // Header fields of the wrong type, a bad escape and runaway nesting: "malformed header", not a crash.
  expect_has(error_for(weights_file_bytes(R"({"weights":5})", "")), {"malformed header"});
  expect_has(error_for(weights_file_bytes(one_weight("[2]", "\"0\""), eight)), {"malformed header"});
  expect_has(error_for(weights_file_bytes(R"({"weights":[],"extra":"\uZZZZ"})", "")), {"malformed header", "\\u"});
  expect_has(error_for(weights_file_bytes(std::string(100000, '[') + std::string(100000, ']'), "")),
             {"malformed header", "nest deeper than"});
  // A header size near 2^64 once wrapped around the bounds check.
  std::string bytes = weights_file_bytes(R"({"weights":[]})", "");
  for (int i = 0; i < 8; ++i) bytes[12 + i] = '\xff';
  expect_has(error_for(bytes), {"truncated", "header of 18446744073709551615 bytes"});
  // An empty tensor with huge other dimensions is empty, not an overflow.
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << weights_file_bytes(one_weight("[4294967296,4294967296,0]", "0"), "");
  const io::WeightsFile file = io::read_weights_file(path.string());
  ASSERT_EQ(file.weights.size(), 1u);
  EXPECT_EQ(file.weights[0].value.numel(), 0);
}

TEST(WeightsFile, LoadingAWeightsOnlyFileAsAModelSaysSo) {
  const fs::path path = temp_dir() / "weights_only.weights";
  small_model().save_weights(path);
  expect_error_mentions([&] { Model::load(path.string()); }, {path.string(), "holds weights only", "load_weights"});
}

TEST(WeightsFile, AStoredArchitectureFarLargerThanItsWeightsIsRefusedBeforeAllocating) {
  // A model file whose config was changed to ask for a Dense layer of 2^31 units (24 GiB of kernel from 3
  // inputs) while the file holds a few bytes of weights.
  const fs::path good = temp_dir() / "model.tower";
  small_model().save(good.string());
  io::WeightsFile file = io::read_weights_file(good.string());
  const std::string json = file.extra.to_json();
  const std::size_t units = json.find("\"units\": 5,");
  ASSERT_NE(units, std::string::npos) << json;
  const std::string damaged_json = json.substr(0, units) + "\"units\": 2147483647," + json.substr(units + 11);
  const fs::path damaged = temp_dir() / "damaged.tower";
  io::write_weights_file(damaged.string(), file.weights, Config::parse_json(damaged_json));
  expect_error_mentions([&] { Model::load(damaged.string()); },
                        {damaged.string(), "the stored architecture does not match the stored weights",
                         "more than the"});
  // The same file undamaged loads.
  EXPECT_EQ(Model::load(good.string()).count_params(), small_model().count_params());
}

TEST(WeightsFile, AFailedSaveLeavesThePreviousFile) {
  const fs::path dir = temp_dir();
  const fs::path p = dir / "keep.weights";
  Sequential m = small_model();
  m.save_weights(p);
  const std::string before = read_all(p);
  // A save that cannot complete (the target is replaced by a directory entry it cannot rename over).
  expect_error_mentions([&] { m.save_weights((dir / "no_such_dir" / "x.weights").string()); }, {"no_such_dir"});
  EXPECT_EQ(read_all(p), before);
}

TEST(WeightsFile, ASaveKilledMidWayNeverDamagesTheFile) {
  const fs::path dir = temp_dir();
  const fs::path p = dir / "big.weights";
  Sequential m({InputLayer({.shape = {512}}), layers::Dense({.units = 2048}), layers::Dense({.units = 512})});
  m.save_weights(p);
  for (int trial = 0; trial < 5; ++trial) {
    const pid_t child = ::fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      for (;;) m.save_weights(p);  // killed below, at an arbitrary point of some write
    }
    ::usleep(static_cast<useconds_t>(20000 + 13000 * trial));
    ::kill(child, SIGKILL);
    ::waitpid(child, nullptr, 0);
    Sequential fresh({InputLayer({.shape = {512}}), layers::Dense({.units = 2048}), layers::Dense({.units = 512})});
    EXPECT_NO_THROW(fresh.load_weights(p)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace tower

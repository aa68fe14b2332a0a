#pragma once
// Text files as lines, as tf.data.TextLineDataset reads them: one string per line, the files in the given order, the
// line breaks removed ("\n" ends a line; every "\r" is dropped, so "\r\n" files read as "\n" files), a last line
// without a line break kept, no empty line made by a file's final line break. Tower's tensors hold numbers, so the
// lines are strings, ready for TextVectorization.
//
// Throws std::runtime_error naming the file when one is missing or cannot be read.
#include <string>
#include <vector>

namespace tower::data {

std::vector<std::string> read_text_lines(const std::vector<std::string>& paths);

}  // namespace tower::data

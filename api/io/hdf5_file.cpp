#include "api/io/hdf5_file.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <tuple>
#include <utility>

// Section numbers below are those of the HDF5 file format specification, version 3.0.
namespace tower::io {

namespace {

std::string hex(std::uint64_t v) {
  std::ostringstream s;
  s << "0x" << std::hex << v;
  return s.str();
}

// A datatype message (IV.A.2.d), reduced to what the reader converts.
struct Datatype {
  enum class Class { integer, floating, string, vlen_string, other } cls = Class::other;
  std::uint32_t size = 0;
  bool big_endian = false;
  bool is_signed = false;
  bool space_padded = false;  // strings
  std::string name = "unknown";  // for errors: "compound", "a shared datatype", ...
};

struct Dataspace {
  std::vector<std::uint64_t> dims;  // empty for a scalar
  std::uint64_t points = 1;         // 0 for the null dataspace
};

struct Attribute {
  Datatype type;
  Dataspace space;
  std::string_view data;
};

struct Link {
  enum class Kind { hard, soft, external } kind = Kind::hard;
  std::uint64_t address = 0;
  std::string target;  // soft links
};

struct Filter {
  std::uint16_t id = 0;
  std::vector<std::uint32_t> params;
};

// Where a dataset's elements are (data layout message, IV.A.2.i).
struct Layout {
  enum class Class { compact, contiguous, chunked, unsupported } cls = Class::unsupported;
  std::string_view compact;
  std::uint64_t address = 0;                // contiguous data, or the chunk B-tree
  std::vector<std::uint64_t> chunk;         // chunk dimensions, the element size last
  std::string unsupported = "no data layout";
};

// One object header (IV.A) with the messages the reader uses.
struct Object {
  bool group = false;
  bool dataset = false;
  bool dense_links = false;
  bool dense_attributes = false;
  std::map<std::string, Link> links;
  std::map<std::string, Attribute> attributes;
  std::optional<Datatype> type;
  std::optional<Dataspace> space;
  Layout layout;
  std::vector<Filter> filters;
};

}  // namespace

namespace detail {

// The bytes of a whole file and its superblock; object headers are parsed on first use and kept.
class Hdf5Image {
 public:
  Hdf5Image(std::string bytes, std::string name);

  const std::string& name() const { return name_; }
  std::uint64_t root() const { return root_; }
  std::shared_ptr<const Object> object(std::uint64_t address, const std::string& path) const;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::runtime_error("HDF5 file '" + name_ + "': " + what);
  }

  // Reads little-endian fields from [begin, end) of the file, throwing `what`: truncated when past the end.
  class Reader {
   public:
    Reader(const Hdf5Image& file, std::uint64_t begin, std::uint64_t end, std::string what)
        : file_(file), pos_(begin), end_(end), what_(std::move(what)) {}
    std::uint64_t uint(unsigned bytes) {
      need(bytes);
      std::uint64_t v = 0;
      for (unsigned i = 0; i < bytes; ++i) v |= std::uint64_t(std::uint8_t(file_.bytes_[pos_ + i])) << (8 * i);
      pos_ += bytes;
      return v;
    }
    std::uint8_t u8() { return std::uint8_t(uint(1)); }
    std::uint16_t u16() { return std::uint16_t(uint(2)); }
    std::uint32_t u32() { return std::uint32_t(uint(4)); }
    std::uint64_t offset() { return uint(file_.offset_size_); }
    std::uint64_t length() { return uint(file_.length_size_); }
    std::string_view bytes(std::uint64_t n) {
      need(n);
      const std::string_view v(file_.bytes_.data() + pos_, n);
      pos_ += n;
      return v;
    }
    void skip(std::uint64_t n) { bytes(n); }
    void expect(std::string_view signature) {
      if (bytes(signature.size()) != signature)
        file_.fail(what_ + ": no '" + std::string(signature) + "' signature at " + hex(pos_ - signature.size()));
    }
    std::uint64_t pos() const { return pos_; }
    std::uint64_t left() const { return end_ - pos_; }
    [[noreturn]] void fail(const std::string& problem) const { file_.fail(what_ + ": " + problem); }

   private:
    void need(std::uint64_t n) const {
      if (n > end_ - pos_) fail("truncated at " + hex(pos_) + " (" + std::to_string(n) + " bytes needed)");
    }
    const Hdf5Image& file_;
    std::uint64_t pos_, end_;
    std::string what_;
  };

  // A reader of `size` bytes at file address `address` (relative to the base address), which must be inside
  // the file; `size` defaults to the rest of the file.
  Reader at(std::uint64_t address, const std::string& what, std::optional<std::uint64_t> size = {}) const {
    const std::uint64_t file_size = bytes_.size();
    if (address == undefined_ || address > file_size - base_)
      fail(what + ": address " + hex(address) + " is outside the file (" + std::to_string(file_size) + " bytes)");
    const std::uint64_t begin = base_ + address;
    if (size && *size > file_size - begin)
      fail(what + ": " + hex(address) + " + " + std::to_string(*size) + " bytes is past the end of the file (" +
           std::to_string(file_size) + " bytes)");
    return Reader(*this, begin, size ? begin + *size : file_size, what);
  }
  std::uint64_t undefined() const { return undefined_; }
  unsigned offset_size() const { return offset_size_; }
  std::uint64_t size() const { return bytes_.size(); }

 private:
  struct Message {
    unsigned type;
    std::uint8_t flags;
    Reader data;
  };
  // The messages of the object header at `address` (IV.A.1), through its continuation blocks.
  std::vector<Message> messages(std::uint64_t address, const std::string& what) const;
  bool has_fractal_heap(Reader r, unsigned creation_index_bytes) const;
  std::shared_ptr<const Object> parse(std::uint64_t address, const std::string& path) const;

  std::string bytes_;
  std::string name_;
  std::uint64_t base_ = 0;
  unsigned offset_size_ = 8, length_size_ = 8;
  std::uint64_t undefined_ = ~std::uint64_t{0};
  std::uint64_t root_ = 0;
  mutable std::mutex mutex_;
  mutable std::map<std::uint64_t, std::shared_ptr<const Object>> objects_;
};

}  // namespace detail

namespace {

using detail::Hdf5Image;
using Reader = Hdf5Image::Reader;

constexpr unsigned kMaxRank = 32;

std::uint64_t checked_mul(std::uint64_t a, std::uint64_t b, const Reader& r, const std::string& what) {
  if (b != 0 && a > ~std::uint64_t{0} / b) r.fail(what + " overflows");
  return a * b;
}

Datatype parse_datatype(Reader r, int depth = 0) {
  const std::uint8_t class_version = r.u8();
  const std::uint8_t bits0 = r.u8();
  r.skip(2);
  Datatype t;
  t.size = r.u32();
  const unsigned cls = class_version & 0x0f;
  switch (cls) {
    case 0: {  // fixed-point
      t.big_endian = bits0 & 1;
      t.is_signed = bits0 & 8;
      const std::uint16_t bit_offset = r.u16(), precision = r.u16();
      t.name = std::to_string(t.size) + "-byte integer";
      if ((t.size == 1 || t.size == 2 || t.size == 4 || t.size == 8) && bit_offset == 0 && precision == 8 * t.size)
        t.cls = Datatype::Class::integer;
      break;
    }
    case 1: {  // floating-point
      t.big_endian = bits0 & 1;
      const bool vax = bits0 & 0x40;
      const std::uint16_t bit_offset = r.u16(), precision = r.u16();
      const std::uint8_t exp_at = r.u8(), exp_bits = r.u8(), mant_at = r.u8(), mant_bits = r.u8();
      const std::uint32_t bias = r.u32();
      t.name = std::to_string(t.size) + "-byte float";
      const bool ieee = (t.size == 2 && exp_at == 10 && exp_bits == 5 && mant_bits == 10 && bias == 15) ||
                        (t.size == 4 && exp_at == 23 && exp_bits == 8 && mant_bits == 23 && bias == 127) ||
                        (t.size == 8 && exp_at == 52 && exp_bits == 11 && mant_bits == 52 && bias == 1023);
      if (ieee && !vax && bit_offset == 0 && precision == 8 * t.size && mant_at == 0)
        t.cls = Datatype::Class::floating;
      else
        t.name = "non-IEEE " + t.name;
      break;
    }
    case 3:  // string
      t.space_padded = (bits0 & 0x0f) == 2;
      t.cls = Datatype::Class::string;
      t.name = "string";
      break;
    case 9:  // variable-length
      if ((bits0 & 0x0f) == 1) {
        t.space_padded = ((bits0 >> 4) & 0x0f) == 2;
        if (depth > 0) r.fail("nested variable-length type");
        parse_datatype(r, depth + 1);  // the base type, checked for well-formedness
        t.cls = Datatype::Class::vlen_string;
        t.name = "variable-length string";
      } else {
        t.name = "variable-length sequence";
      }
      break;
    default: {
      static const char* names[] = {"integer", "float",    "time",  "string",   "bitfield", "opaque",
                                    "compound", "reference", "enum", "variable-length", "array"};
      t.name = cls < 11 ? names[cls] : "class " + std::to_string(cls);
    }
  }
  return t;
}

Dataspace parse_dataspace(Reader r) {
  const std::uint8_t version = r.u8();
  const std::uint8_t rank = r.u8();
  const std::uint8_t flags = r.u8();
  Dataspace s;
  if (version == 1) {
    r.skip(5);
  } else if (version == 2) {
    const std::uint8_t type = r.u8();
    if (type == 2) {
      s.points = 0;
      return s;
    }
    if (type > 2) r.fail("dataspace type " + std::to_string(type));
  } else {
    r.fail("dataspace version " + std::to_string(version));
  }
  if (rank > kMaxRank) r.fail("dataspace of rank " + std::to_string(rank));
  (void)flags;
  for (unsigned i = 0; i < rank; ++i) {
    s.dims.push_back(r.length());
    s.points = checked_mul(s.points, s.dims.back(), r, "the number of elements");
  }
  if (s.points > (std::uint64_t{1} << 48)) r.fail("dataspace of " + std::to_string(s.points) + " elements");
  return s;
}

// Reads a name of `size` bytes (with or without its terminating NUL) at the reader's position.
std::string read_name(Reader& r, std::uint64_t size) {
  std::string_view s = r.bytes(size);
  s = s.substr(0, s.find('\0'));
  return std::string(s);
}

// An attribute message (IV.A.2.m): the attribute's name and value.
std::pair<std::string, Attribute> parse_attribute(Reader r) {
  const std::uint8_t version = r.u8();
  const std::uint8_t flags = r.u8();
  const std::uint16_t name_size = r.u16(), type_size = r.u16(), space_size = r.u16();
  if (version < 1 || version > 3) r.fail("attribute message version " + std::to_string(version));
  if (version == 3) r.u8();  // name encoding
  auto padded = [&](std::uint64_t n) { return version == 1 ? (n + 7) / 8 * 8 : n; };
  Attribute a;
  std::string name = read_name(r, padded(name_size));
  Reader type_reader = r;
  r.skip(padded(type_size));
  Reader space_reader = r;
  r.skip(padded(space_size));
  if (flags & 1) {
    a.type.name = "a shared datatype";
  } else {
    a.type = parse_datatype(type_reader);
  }
  if (flags & 2) r.fail("shared dataspace in an attribute");
  a.space = parse_dataspace(space_reader);
  const std::uint64_t element = a.type.cls == Datatype::Class::other ? 0 : a.type.size;
  const std::uint64_t size = checked_mul(a.space.points, element, r, "the attribute's size");
  if (size > r.left())
    r.fail("attribute data of " + std::to_string(size) + " bytes, " + std::to_string(r.left()) + " in the message");
  a.data = r.bytes(size);
  return {std::move(name), std::move(a)};
}

// A link message (IV.A.2.g).
std::pair<std::string, Link> parse_link(Reader r) {
  if (r.u8() != 1) r.fail("link message version");
  const std::uint8_t flags = r.u8();
  std::uint8_t type = 0;
  if (flags & 0x08) type = r.u8();
  if (flags & 0x04) r.skip(8);
  if (flags & 0x10) r.u8();
  const std::uint64_t name_length = r.uint(1u << (flags & 3));
  std::string name(r.bytes(name_length));
  Link link;
  if (type == 0) {
    link.address = r.offset();
  } else if (type == 1) {
    link.kind = Link::Kind::soft;
    link.target = std::string(r.bytes(r.u16()));
  } else {
    link.kind = Link::Kind::external;
  }
  if (name.empty() || name.find('/') != std::string::npos) r.fail("link named '" + name + "'");
  return {std::move(name), std::move(link)};
}

Layout parse_layout(Reader r) {
  const std::uint8_t version = r.u8();
  Layout l;
  if (version == 1 || version == 2) {
    const std::uint8_t rank = r.u8(), cls = r.u8();
    r.skip(5);
    if (rank > kMaxRank + 1) r.fail("data layout of rank " + std::to_string(rank));
    if (cls != 0) l.address = r.offset();
    std::vector<std::uint64_t> dims;
    for (unsigned i = 0; i < rank; ++i) dims.push_back(r.u32());
    if (cls == 0) {
      l.cls = Layout::Class::compact;
      l.compact = r.bytes(r.u32());
    } else if (cls == 1) {
      l.cls = Layout::Class::contiguous;
    } else if (cls == 2) {
      l.cls = Layout::Class::chunked;
      l.chunk = dims;  // the element size last, as in version 3
    } else {
      r.fail("data layout class " + std::to_string(cls));
    }
  } else if (version == 3 || version == 4) {
    const std::uint8_t cls = r.u8();
    if (cls == 0) {
      l.cls = Layout::Class::compact;
      l.compact = r.bytes(r.u16());
    } else if (cls == 1) {
      l.cls = Layout::Class::contiguous;
      l.address = r.offset();
      r.length();
    } else if (cls == 2 && version == 3) {
      l.cls = Layout::Class::chunked;
      const std::uint8_t rank = r.u8();
      if (rank < 1 || rank > kMaxRank + 1) r.fail("chunk rank " + std::to_string(rank));
      l.address = r.offset();
      for (unsigned i = 0; i < rank; ++i) l.chunk.push_back(r.u32());
    } else {
      l.unsupported = cls == 2 ? "chunk indexes of data layout version 4 (libver=\"latest\")" : "virtual datasets";
    }
  } else {
    r.fail("data layout version " + std::to_string(version));
  }
  if (l.cls == Layout::Class::chunked)
    for (std::uint64_t d : l.chunk)
      if (d == 0) r.fail("a chunk dimension of 0");
  return l;
}

std::vector<Filter> parse_filters(Reader r) {
  const std::uint8_t version = r.u8();
  const std::uint8_t count = r.u8();
  if (version == 1) r.skip(6);
  else if (version != 2) r.fail("filter pipeline version " + std::to_string(version));
  std::vector<Filter> filters;
  for (unsigned i = 0; i < count; ++i) {
    Filter f;
    f.id = r.u16();
    const std::uint16_t name_length = version == 1 || f.id >= 256 ? r.u16() : 0;
    r.u16();  // flags
    const std::uint16_t params = r.u16();
    if (name_length) r.skip(version == 1 ? (name_length + 7u) / 8 * 8 : name_length);
    for (unsigned k = 0; k < params; ++k) f.params.push_back(r.u32());
    if (version == 1 && params % 2) r.skip(4);
    filters.push_back(std::move(f));
  }
  return filters;
}

// The names in a local heap (III.D), by offset in its data segment.
struct LocalHeap {
  std::string_view data;
  std::string name(std::uint64_t offset, const Reader& r) const {
    if (offset >= data.size()) r.fail("link name offset " + std::to_string(offset) + " outside the local heap");
    const std::string_view s = data.substr(offset);
    const std::size_t end = s.find('\0');
    if (end == std::string_view::npos) r.fail("link name without its terminating NUL in the local heap");
    return std::string(s.substr(0, end));
  }
};

LocalHeap read_local_heap(const Hdf5Image& file, std::uint64_t address, const std::string& what) {
  Reader r = file.at(address, what + ", local heap");
  r.expect("HEAP");
  if (r.u8() != 0) r.fail("local heap version");
  r.skip(3);
  const std::uint64_t size = r.length();
  r.length();  // free list
  const std::uint64_t data = r.offset();
  return {file.at(data, what + ", local heap data", size).bytes(size)};
}

// A group's symbol table (III.A.1 version 1 B-tree of group nodes, III.B symbol table nodes).
void read_symbol_table(const Hdf5Image& file, std::uint64_t btree, std::uint64_t heap_address, const std::string& what,
                       std::map<std::string, Link>& links) {
  const LocalHeap heap = read_local_heap(file, heap_address, what);
  struct Pending {
    std::uint64_t address;
    int level;  // of a B-tree node, -1 for the root (any level) and for symbol table nodes
    bool symbols;
  };
  std::set<std::uint64_t> seen;
  std::vector<Pending> stack = {{btree, -1, false}};
  while (!stack.empty()) {
    const Pending node = stack.back();
    stack.pop_back();
    if (!seen.insert(node.address).second) file.fail(what + ": B-tree node " + hex(node.address) + " reached twice");
    Reader r = file.at(node.address, what + ", B-tree node " + hex(node.address));
    if (node.symbols) {
      r.expect("SNOD");
      if (r.u8() != 1) r.fail("symbol table node version");
      r.u8();
      const std::uint16_t count = r.u16();
      for (unsigned i = 0; i < count; ++i) {
        const std::uint64_t name = r.offset();
        Link link;
        link.address = r.offset();
        const std::uint32_t cache = r.u32();
        r.skip(4);
        Reader scratch = r;
        r.skip(16);
        if (cache == 2) {
          link.kind = Link::Kind::soft;
          link.target = heap.name(scratch.u32(), r);
        }
        std::string n = heap.name(name, r);
        if (n.empty() || n.find('/') != std::string::npos) r.fail("link named '" + n + "'");
        links[std::move(n)] = std::move(link);
      }
      continue;
    }
    r.expect("TREE");
    if (r.u8() != 0) r.fail("not a group B-tree node");
    const std::uint8_t level = r.u8();
    if (node.level >= 0 && level != node.level) r.fail("B-tree levels out of order");
    const std::uint16_t entries = r.u16();
    r.skip(2 * file.offset_size());  // siblings
    for (unsigned i = 0; i < entries; ++i) {
      r.length();  // key
      const std::uint64_t child = r.offset();
      stack.push_back(level == 0 ? Pending{child, -1, true} : Pending{child, level - 1, false});
    }
  }
}

}  // namespace

namespace detail {

Hdf5Image::Hdf5Image(std::string bytes, std::string name) : bytes_(std::move(bytes)), name_(std::move(name)) {
  static constexpr std::string_view kSignature("\x89HDF\r\n\x1a\n", 8);
  std::uint64_t at = 0;
  while (at < bytes_.size() && std::string_view(bytes_).substr(at, 8) != kSignature) at = at ? 2 * at : 512;
  if (at >= bytes_.size()) fail("not an HDF5 file (no superblock signature)");
  base_ = at;
  Reader r(*this, at + 8, bytes_.size(), "superblock");
  const std::uint8_t version = r.u8();
  if (version > 3) r.fail("version " + std::to_string(version));
  auto sizes = [&](std::uint8_t offsets, std::uint8_t lengths) {
    if ((offsets != 2 && offsets != 4 && offsets != 8) || (lengths != 2 && lengths != 4 && lengths != 8))
      r.fail("sizes of offsets and lengths " + std::to_string(offsets) + ", " + std::to_string(lengths));
    offset_size_ = offsets;
    length_size_ = lengths;
    undefined_ = offsets == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * offsets)) - 1;
  };
  if (version <= 1) {
    r.skip(4);
    const std::uint8_t offsets = r.u8(), lengths = r.u8();
    sizes(offsets, lengths);
    r.skip(1 + 4 + 4 + (version == 1 ? 4 : 0));
    r.skip(4 * offset_size_);  // base, free space, end of file, driver information
    r.offset();                // the root's symbol table entry: link name offset, object header address
    root_ = r.offset();
  } else {
    const std::uint8_t offsets = r.u8(), lengths = r.u8();
    sizes(offsets, lengths);
    r.skip(1 + 3 * offset_size_);  // flags, base, superblock extension, end of file
    root_ = r.offset();
  }
}

std::shared_ptr<const Object> Hdf5Image::object(std::uint64_t address, const std::string& path) const {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const auto it = objects_.find(address);
    if (it != objects_.end()) return it->second;
  }
  std::shared_ptr<const Object> parsed = parse(address, path);
  std::lock_guard<std::mutex> lock(mutex_);
  return objects_.emplace(address, std::move(parsed)).first->second;
}

std::vector<Hdf5Image::Message> Hdf5Image::messages(std::uint64_t address, const std::string& what) const {
  std::vector<Message> messages;
  std::set<std::uint64_t> blocks;
  std::uint64_t scanned = 0;
  std::vector<std::tuple<std::uint64_t, std::uint64_t, bool>> stack;  // header blocks: address, size, continuation?
  Reader first = at(address, what);
  int version = 1;
  std::uint64_t chunk_begin = 0, chunk_size = 0;
  bool creation_order = false;
  if (first.bytes(4) == "OHDR") {
    version = 2;
    if (first.u8() != 2) first.fail("version");
    const std::uint8_t flags = first.u8();
    creation_order = flags & 0x04;
    if (flags & 0x20) first.skip(16);
    if (flags & 0x10) first.skip(4);
    chunk_size = first.uint(1u << (flags & 3));
    chunk_begin = first.pos() - base_;
  } else {
    Reader r = at(address, what);
    if (r.u8() != 1) r.fail("unknown object header version");
    r.skip(1 + 2 + 4);
    chunk_size = r.u32();
    r.skip(4);
    chunk_begin = address + 16;
  }
  stack.emplace_back(chunk_begin, version == 2 ? chunk_size + 4 : chunk_size, false);
  while (!stack.empty()) {
    const auto [begin, size, continuation] = stack.back();
    stack.pop_back();
    if (!blocks.insert(begin).second) fail(what + ": header block " + hex(begin) + " reached twice");
    scanned += size;
    if (scanned > bytes_.size()) fail(what + ": header blocks larger than the file");
    at(begin, what, size);
    if (version == 2 && size < 4 + (continuation ? 4u : 0u))
      fail(what + ": header block of " + std::to_string(size) + " bytes");
    Reader r = at(begin, what, version == 2 ? size - 4 : size);  // version 2 blocks end in a checksum
    if (version == 2 && continuation) r.expect("OCHK");
    const unsigned prefix = version == 1 ? 8 : (creation_order ? 6 : 4);
    while (r.left() >= prefix) {
      unsigned type;
      std::uint64_t length;
      std::uint8_t flags;
      if (version == 1) {
        type = r.u16();
        length = r.u16();
        flags = r.u8();
        r.skip(3);
      } else {
        type = r.u8();
        length = r.u16();
        flags = r.u8();
        if (creation_order) r.skip(2);
      }
      if (length > r.left()) r.fail("message of " + std::to_string(length) + " bytes past its header block");
      const std::uint64_t data = r.pos() - base_;
      r.skip(length);
      if (messages.size() > 65536) fail(what + ": more than 65536 messages");
      if (type == 0x10) {  // continuation
        Reader c = at(data, what, length);
        const std::uint64_t block = c.offset(), block_size = c.length();
        stack.emplace_back(block, block_size, true);
        continue;
      }
      messages.push_back({type, flags, at(data, what + ", message " + hex(type), length)});
    }
  }
  return messages;
}

// Whether a link info or attribute info message (IV.A.2.c, IV.A.2.v) points to a fractal heap, i.e. the links
// or attributes are in dense storage; `creation_index_bytes` is the size of its optional maximum creation index.
bool Hdf5Image::has_fractal_heap(Reader r, unsigned creation_index_bytes) const {
  r.u8();  // version
  if (r.u8() & 1) r.skip(creation_index_bytes);
  return r.offset() != undefined_;
}

std::shared_ptr<const Object> Hdf5Image::parse(std::uint64_t address, const std::string& path) const {
  const std::string what = "object header of '" + path + "' at " + hex(address);
  auto result = std::make_shared<Object>();
  Object& o = *result;
  for (Message& m : messages(address, what)) {
    const bool shared = m.flags & 0x02;
    switch (m.type) {
      case 0x01:
        if (shared) m.data.fail("shared dataspace");
        o.space = parse_dataspace(m.data);
        break;
      case 0x02:  // link info
        o.group = true;
        o.dense_links = has_fractal_heap(m.data, 8);
        break;
      case 0x03:
        if (shared) {
          o.type = Datatype{};
          o.type->name = "a shared (committed) datatype";
        } else {
          o.type = parse_datatype(m.data);
        }
        break;
      case 0x06: {
        o.group = true;
        auto [name, link] = parse_link(m.data);
        o.links[std::move(name)] = std::move(link);
        break;
      }
      case 0x08:
        o.dataset = true;
        o.layout = parse_layout(m.data);
        break;
      case 0x0a: o.group = true; break;
      case 0x0b: o.filters = parse_filters(m.data); break;
      case 0x0c: {
        if (shared) m.data.fail("shared attribute");
        auto [name, attribute] = parse_attribute(m.data);
        o.attributes[std::move(name)] = std::move(attribute);
        break;
      }
      case 0x11: {  // symbol table
        o.group = true;
        Reader& r = m.data;
        const std::uint64_t btree = r.offset(), heap = r.offset();
        read_symbol_table(*this, btree, heap, "group '" + path + "'", o.links);
        break;
      }
      case 0x15:  // attribute info
        o.dense_attributes = has_fractal_heap(m.data, 2);
        break;
      default: break;
    }
  }
  if (o.dataset && (!o.type || !o.space)) fail(what + ": a dataset without its datatype or dataspace");
  return result;
}

}  // namespace detail

namespace {

std::string join(const std::string& path, const std::string& name) {
  return path == "/" ? "/" + name : path + "/" + name;
}

// The path's components, without empty ones and ".".
std::vector<std::string> split(const std::string& path) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = std::min(path.find('/', start), path.size());
    std::string part = path.substr(start, slash - start);
    if (!part.empty() && part != ".") parts.push_back(std::move(part));
    start = slash + 1;
  }
  return parts;
}

[[noreturn]] void fail_dense_links(const Hdf5Image& file, const std::string& path) {
  file.fail("group '" + path +
            "' keeps its links in dense storage (a fractal heap, written by libver=\"latest\" for groups of more "
            "than 8 members), which Tower does not read");
}

struct Found {
  std::uint64_t address;
  std::string path;
  std::shared_ptr<const Object> object;
};

// Follows `relative` from the group at `address` (named `path`), through hard and soft links.
std::optional<Found> resolve(const Hdf5Image& file, std::uint64_t address, const std::string& path,
                             const std::string& relative, int& hops) {
  Found at{address, path, file.object(address, path)};
  if (!relative.empty() && relative[0] == '/') at = {file.root(), "/", file.object(file.root(), "/")};
  for (const std::string& name : split(relative)) {
    if (!at.object->group) return std::nullopt;
    const auto it = at.object->links.find(name);
    if (it == at.object->links.end()) {
      if (at.object->dense_links)
        fail_dense_links(file, at.path);
      return std::nullopt;
    }
    const Link& link = it->second;
    const std::string child = join(at.path, name);
    if (link.kind == Link::Kind::external)
      file.fail("'" + child + "' is an external link, which Tower does not follow");
    if (link.kind == Link::Kind::soft) {
      if (++hops > 16) file.fail("'" + child + "': more than 16 soft links followed");
      std::optional<Found> target = resolve(file, at.address, at.path, link.target, hops);
      if (!target) return std::nullopt;
      at = std::move(*target);
      at.path = child;
      continue;
    }
    at = {link.address, child, file.object(link.address, child)};
  }
  return at;
}

std::optional<Found> resolve(const Hdf5Image& file, std::uint64_t address, const std::string& path,
                             const std::string& relative) {
  int hops = 0;
  return resolve(file, address, path, relative, hops);
}

// The element at `p` of type `t` as a float.
float to_float(const char* p, const Datatype& t) {
  unsigned char b[8];
  for (unsigned i = 0; i < t.size; ++i) b[i] = static_cast<unsigned char>(p[t.big_endian ? t.size - 1 - i : i]);
  std::uint64_t bits = 0;
  for (unsigned i = 0; i < t.size; ++i) bits |= std::uint64_t(b[i]) << (8 * i);
  if (t.cls == Datatype::Class::integer) {
    if (t.is_signed && t.size < 8 && (bits >> (8 * t.size - 1)) & 1) bits |= ~std::uint64_t{0} << (8 * t.size);
    return t.is_signed ? static_cast<float>(static_cast<std::int64_t>(bits)) : static_cast<float>(bits);
  }
  if (t.size == 8) {
    double d;
    std::memcpy(&d, &bits, 8);
    return static_cast<float>(d);
  }
  if (t.size == 4) {
    float f;
    const auto u = static_cast<std::uint32_t>(bits);
    std::memcpy(&f, &u, 4);
    return f;
  }
  // IEEE half precision.
  const unsigned sign = (bits >> 15) & 1, exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  float v;
  if (exponent == 0) v = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31) v = mantissa ? std::nanf("") : std::numeric_limits<float>::infinity();
  else v = std::ldexp(static_cast<float>(mantissa | 0x400), int(exponent) - 25);
  return sign ? -v : v;
}

std::string inflate_chunk(std::string_view in, std::uint64_t out_size, const Reader& r) {
  std::string out(out_size, '\0');  // out_size < 4 GiB
  z_stream z{};
  if (inflateInit(&z) != Z_OK) r.fail("cannot start zlib");
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  const int status = inflate(&z, Z_FINISH);
  const std::uint64_t produced = z.total_out;
  inflateEnd(&z);
  if (status != Z_STREAM_END || produced != out_size)
    r.fail("a deflate-compressed chunk that does not inflate to " + std::to_string(out_size) + " bytes");
  return out;
}

std::string unshuffle(std::string_view in, std::uint64_t element) {
  std::string out(in.size(), '\0');
  const std::uint64_t n = element ? in.size() / element : 0;
  for (std::uint64_t b = 0; b < element; ++b)
    for (std::uint64_t i = 0; i < n; ++i) out[i * element + b] = in[b * n + i];
  std::copy(in.begin() + static_cast<std::ptrdiff_t>(n * element), in.end(),
            out.begin() + static_cast<std::ptrdiff_t>(n * element));
  return out;
}

// Copies a chunked dataset's chunks (III.A.1 B-tree of raw data chunk nodes) into `out`, the dataset's
// elements in row-major order as they are in the file.
void read_chunks(const Hdf5Image& file, const Object& o, const std::string& what, std::string& out) {
  const std::vector<std::uint64_t>& dims = o.space->dims;
  const std::vector<std::uint64_t>& chunk = o.layout.chunk;
  const std::uint64_t element = o.type->size;
  const std::size_t rank = dims.size();
  auto fail = [&](const std::string& problem) { file.fail(what + ": " + problem); };
  if (rank == 0 || chunk.size() != rank + 1 || chunk.back() != element)
    fail("chunk dimensions that do not match the dataspace and the element size");
  std::uint64_t chunk_bytes = 1;
  for (std::uint64_t d : chunk) {
    if (d > (std::uint64_t{1} << 32) || chunk_bytes * d > (std::uint64_t{1} << 32)) fail("chunks of 4 GiB or more");
    chunk_bytes *= d;
  }
  // Deflate expands at most about 1032 times; nothing valid decodes to more than this.
  const std::uint64_t budget = 4 * out.size() + chunk_bytes;
  if (chunk_bytes > 1100 * file.size()) fail("chunks of " + std::to_string(chunk_bytes) + " bytes");
  for (const Filter& f : o.filters)
    if (f.id != 1 && f.id != 2)
      fail("filter " + std::to_string(f.id) + (f.id == 3 ? " (fletcher32)" : f.id == 4 ? " (szip)" : "") +
           ", which Tower does not decode (it reads deflate and shuffle)");
  std::set<std::uint64_t> seen;
  std::set<std::vector<std::uint64_t>> offsets;
  std::uint64_t decoded = 0;
  std::vector<std::pair<std::uint64_t, int>> stack = {{o.layout.address, -1}};  // B-tree nodes, their level
  while (!stack.empty()) {
    const auto [address, expected_level] = stack.back();
    stack.pop_back();
    if (!seen.insert(address).second) fail("chunk B-tree node " + hex(address) + " reached twice");
    Reader r = file.at(address, what + ", chunk B-tree node " + hex(address));
    r.expect("TREE");
    if (r.u8() != 1) r.fail("not a chunk B-tree node");
    const std::uint8_t level = r.u8();
    if (expected_level >= 0 && level != expected_level) r.fail("B-tree levels out of order");
    const std::uint16_t entries = r.u16();
    r.skip(2 * file.offset_size());
    for (unsigned i = 0; i < entries; ++i) {
      const std::uint32_t size = r.u32(), mask = r.u32();
      std::vector<std::uint64_t> offset;
      for (std::size_t d = 0; d <= rank; ++d) offset.push_back(r.uint(8));
      const std::uint64_t child = r.offset();
      if (level > 0) {
        stack.push_back({child, level - 1});
        continue;
      }
      offset.pop_back();  // always 0: the element's own dimension
      for (std::size_t d = 0; d < rank; ++d)
        if (offset[d] >= dims[d] || offset[d] % chunk[d]) r.fail("a chunk outside the dataspace");
      if (!offsets.insert(offset).second) r.fail("two chunks at the same place");
      decoded += chunk_bytes;
      if (decoded > budget) r.fail("more chunk data than the dataspace holds");
      std::string data(file.at(child, what + ", chunk at " + hex(child), size).bytes(size));
      for (std::size_t k = o.filters.size(); k-- > 0;) {
        if (k < 32 && (mask & (1u << k))) continue;
        data = o.filters[k].id == 1 ? inflate_chunk(data, chunk_bytes, r) : unshuffle(data, element);
      }
      if (data.size() != chunk_bytes)
        r.fail("a chunk of " + std::to_string(data.size()) + " bytes, expected " + std::to_string(chunk_bytes));
      // The chunk's rows (runs along the last dimension) that fall inside the dataspace.
      std::vector<std::uint64_t> row(rank - 1, 0);
      const std::uint64_t row_length = std::min(chunk[rank - 1], dims[rank - 1] - offset[rank - 1]);
      for (bool more = true; more;) {
        bool inside = true;
        std::uint64_t src = 0, dst = 0;
        for (std::size_t d = 0; d + 1 < rank; ++d) {
          inside = inside && offset[d] + row[d] < dims[d];
          src = src * chunk[d] + row[d];
          dst = dst * dims[d] + offset[d] + row[d];
        }
        if (inside)
          std::memcpy(out.data() + (dst * dims[rank - 1] + offset[rank - 1]) * element,
                      data.data() + src * chunk[rank - 1] * element, row_length * element);
        more = false;
        for (std::size_t d = rank - 1; d-- > 0;) {
          if (++row[d] < chunk[d]) {
            more = true;
            break;
          }
          row[d] = 0;
        }
      }
    }
  }
}

// The dataset at `relative` from the group at `address` (named `path`); throws when there is none.
std::shared_ptr<const Object> find_dataset(const Hdf5Image& file, std::uint64_t address, const std::string& path,
                                           const std::string& relative) {
  const std::optional<Found> f = resolve(file, address, path, relative);
  if (!f || !f->object->dataset) file.fail("no dataset '" + join(path, relative) + "'");
  return f->object;
}

Shape shape_of(const Dataspace& space) {
  std::vector<Index> dims;
  for (std::uint64_t d : space.dims) dims.push_back(static_cast<Index>(d));
  return Shape(dims);
}

// The objects of a global heap collection (III.E) by their index.
std::map<std::uint32_t, std::string_view> read_global_heap(const Hdf5Image& file, std::uint64_t address,
                                                           const std::string& where) {
  const std::string what = where + ", global heap " + hex(address);
  Reader r = file.at(address, what);
  r.expect("GCOL");
  if (r.u8() != 1) r.fail("global heap version");
  r.skip(3);
  const std::uint64_t size = r.length();
  if (size < 16) r.fail("global heap of " + std::to_string(size) + " bytes");
  Reader objects = file.at(address, what, size);
  objects.skip(16);
  std::map<std::uint32_t, std::string_view> heap;
  while (objects.left() >= 16) {
    const std::uint16_t id = objects.u16();
    objects.skip(6);  // reference count, reserved
    const std::uint64_t bytes = objects.length();
    if (id == 0) break;  // free space
    const std::uint64_t padded = (bytes + 7) / 8 * 8;
    if (padded < bytes || padded > objects.left())
      objects.fail("object " + std::to_string(id) + " past the heap's end");
    heap[id] = objects.bytes(padded).substr(0, bytes);
  }
  return heap;
}

}  // namespace

Hdf5Group::Hdf5Group(std::shared_ptr<const detail::Hdf5Image> file, std::uint64_t address, std::string path)
    : file_(std::move(file)), address_(address), path_(std::move(path)) {}

const std::string& Hdf5Group::file_name() const { return file_->name(); }

std::string Hdf5Group::child_path(const std::string& name) const { return join(path_, name); }

std::vector<std::string> Hdf5Group::children() const {
  const std::shared_ptr<const Object> o = file_->object(address_, path_);
  if (o->dense_links)
    fail_dense_links(*file_, path_);
  std::vector<std::string> names;
  for (const auto& [name, link] : o->links) names.push_back(name);
  return names;
}

bool Hdf5Group::has_group(const std::string& name) const {
  const std::optional<Found> f = resolve(*file_, address_, path_, name);
  return f && f->object->group;
}

bool Hdf5Group::has_dataset(const std::string& name) const {
  const std::optional<Found> f = resolve(*file_, address_, path_, name);
  return f && f->object->dataset;
}

Hdf5Group Hdf5Group::group(const std::string& name) const {
  const std::optional<Found> f = resolve(*file_, address_, path_, name);
  if (!f || !f->object->group) file_->fail("no group '" + child_path(name) + "'");
  return Hdf5Group(file_, f->address, child_path(name));
}

bool Hdf5Group::has_attribute(const std::string& name) const {
  const std::shared_ptr<const Object> o = file_->object(address_, path_);
  if (o->attributes.count(name)) return true;
  if (o->dense_attributes)
    file_->fail("'" + path_ + "' keeps its attributes in dense storage (a fractal heap), which Tower does not read");
  return false;
}

std::string Hdf5Group::string_attribute(const std::string& name) const {
  const std::vector<std::string> values = string_list_attribute(name);
  if (values.size() != 1)
    file_->fail("attribute '" + name + "' of '" + path_ + "' holds " + std::to_string(values.size()) +
                " strings, expected one");
  return values[0];
}

std::vector<std::string> Hdf5Group::string_list_attribute(const std::string& name) const {
  const std::string where = "attribute '" + name + "' of '" + path_ + "'";
  if (!has_attribute(name)) file_->fail("no " + where);
  const Attribute& a = file_->object(address_, path_)->attributes.at(name);
  if (a.space.points == 0) return {};
  std::vector<std::string> values;
  if (a.type.cls == Datatype::Class::string) {
    const std::uint64_t size = a.type.size;
    for (std::uint64_t i = 0; i < a.space.points; ++i) {
      std::string_view s = a.data.substr(i * size, size);
      s = s.substr(0, s.find('\0'));
      if (a.type.space_padded) s = s.substr(0, s.find_last_not_of(' ') + 1);
      values.emplace_back(s);
    }
    return values;
  }
  if (a.type.cls != Datatype::Class::vlen_string) file_->fail(where + " is not a string (" + a.type.name + ")");
  // Each element: its length, then the global heap collection's address and the object's index (III.E).
  const unsigned o = file_->offset_size();
  if (a.type.size != 8 + o)
    file_->fail(where + ": variable-length elements of " + std::to_string(a.type.size) + " bytes");
  std::map<std::uint64_t, std::map<std::uint32_t, std::string_view>> heaps;
  for (std::uint64_t i = 0; i < a.space.points; ++i) {
    const std::string_view element = a.data.substr(i * (8 + o), 8 + o);
    std::uint64_t fields[3] = {0, 0, 0};
    const unsigned widths[3] = {4, o, 4};
    for (unsigned f = 0, at = 0; f < 3; at += widths[f], ++f)
      for (unsigned b = 0; b < widths[f]; ++b) fields[f] |= std::uint64_t(std::uint8_t(element[at + b])) << (8 * b);
    const auto [length, collection, index] = std::tuple(fields[0], fields[1], std::uint32_t(fields[2]));
    if (length == 0) {
      values.emplace_back();
      continue;
    }
    auto heap = heaps.find(collection);
    if (heap == heaps.end()) heap = heaps.emplace(collection, read_global_heap(*file_, collection, where)).first;
    const auto object = heap->second.find(index);
    if (object == heap->second.end())
      file_->fail(where + ": no object " + std::to_string(index) + " in global heap " + hex(collection));
    if (length > object->second.size())
      file_->fail(where + ": a string of " + std::to_string(length) + " bytes in a heap object of " +
                  std::to_string(object->second.size()));
    std::string_view s = object->second.substr(0, length);
    s = s.substr(0, s.find('\0'));
    values.emplace_back(s);
  }
  return values;
}

Shape Hdf5Group::dataset_shape(const std::string& name) const {
  return shape_of(*find_dataset(*file_, address_, path_, name)->space);
}

Tensor Hdf5Group::read_dataset(const std::string& name) const {
  const std::shared_ptr<const Object> object = find_dataset(*file_, address_, path_, name);
  const Object& o = *object;
  const Shape shape = shape_of(*o.space);
  const std::string what = "dataset '" + child_path(name) + "'";
  const Datatype& t = *o.type;
  if (t.cls != Datatype::Class::integer && t.cls != Datatype::Class::floating)
    file_->fail(what + " does not hold numbers (" + t.name + ")");
  const std::uint64_t n = o.space->points;
  const std::uint64_t bytes = n * t.size;  // points < 2^48, size <= 8
  std::string chunked;
  std::string_view data;
  switch (o.layout.cls) {
    case Layout::Class::compact:
      if (o.layout.compact.size() < bytes)
        file_->fail(what + ": " + std::to_string(o.layout.compact.size()) + " bytes of compact data, expected " +
                    std::to_string(bytes));
      data = o.layout.compact;
      break;
    case Layout::Class::contiguous:
      if (bytes == 0) break;
      if (o.layout.address == file_->undefined()) file_->fail(what + " has no data (it was never written)");
      data = file_->at(o.layout.address, what + ": data", bytes).bytes(bytes);
      break;
    case Layout::Class::chunked:
      if (bytes > 1100 * file_->size())
        file_->fail(what + ": " + std::to_string(bytes) + " bytes of elements, more than the file could hold");
      chunked.assign(bytes, '\0');
      if (bytes) read_chunks(*file_, o, what, chunked);
      data = chunked;
      break;
    case Layout::Class::unsupported: file_->fail(what + ": " + o.layout.unsupported + ", which Tower does not read");
  }
  Tensor out{shape};
  float* values = static_cast<float*>(out.raw_data());
  for (std::uint64_t i = 0; i < n; ++i) values[i] = to_float(data.data() + i * t.size, t);
  return out;
}

Hdf5File Hdf5File::from_bytes(std::string bytes, const std::string& name) {
  auto image = std::make_shared<const detail::Hdf5Image>(std::move(bytes), name);
  const std::shared_ptr<const Object> root = image->object(image->root(), "/");
  if (!root->group) image->fail("the root object is not a group");
  return Hdf5File(image, image->root(), "/");
}

Hdf5File Hdf5File::open(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("HDF5 file '" + path + "': cannot open: " + std::strerror(errno));
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw std::runtime_error("HDF5 file '" + path + "': cannot read: " + std::strerror(errno));
  return from_bytes(std::move(bytes), path);
}

}  // namespace tower::io

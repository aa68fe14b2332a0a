#include "api/io/hdf5_file.h"

#include <hdf5.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <stdexcept>

namespace tower::io {

namespace detail {
Hdf5Handle::~Hdf5Handle() {
  if (id_ < 0) return;
  switch (H5Iget_type(id_)) {
    case H5I_FILE: H5Fclose(id_); break;
    case H5I_GROUP: H5Gclose(id_); break;
    case H5I_DATASET: H5Dclose(id_); break;
    case H5I_ATTR: H5Aclose(id_); break;
    case H5I_DATATYPE: H5Tclose(id_); break;
    case H5I_DATASPACE: H5Sclose(id_); break;
    case H5I_GENPROP_LST: H5Pclose(id_); break;
    default: break;
  }
}
}  // namespace detail

namespace {

using detail::Hdf5Handle;

// Turns HDF5's automatic error printing off for the current thread while alive; the error stack itself is
// kept, so a failure can still be described.
class QuietErrors {
 public:
  QuietErrors() {
    H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~QuietErrors() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }
  QuietErrors(const QuietErrors&) = delete;
  QuietErrors& operator=(const QuietErrors&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// HDF5's most specific message for the last failure on this thread, or "".
std::string hdf5_error_message() {
  std::string message;
  H5Ewalk2(
      H5E_DEFAULT, H5E_WALK_UPWARD,
      [](unsigned, const H5E_error2_t* e, void* out) -> herr_t {
        auto& m = *static_cast<std::string*>(out);
        if (m.empty() && e->desc && *e->desc) m = e->desc;
        return 0;
      },
      &message);
  return message;
}

[[noreturn]] void fail_file(const std::string& file, const std::string& what) {
  const std::string detail = hdf5_error_message();
  throw std::runtime_error("HDF5 file '" + file + "': " + what + (detail.empty() ? "" : " (" + detail + ")"));
}

// `id`, or a failure naming `what` when HDF5 returned an error.
hid_t checked(hid_t id, const std::string& file, const std::string& what) {
  if (id < 0) fail_file(file, what);
  return id;
}

// Whether every component of a relative path exists as a link (H5Lexists requires the parents to exist).
bool link_exists(hid_t loc, const std::string& path) {
  std::size_t start = 0;
  while (start <= path.size()) {
    const std::size_t slash = path.find('/', start);
    const std::string prefix = path.substr(0, slash);
    if (H5Lexists(loc, prefix.c_str(), H5P_DEFAULT) <= 0) return false;
    if (slash == std::string::npos) return true;
    start = slash + 1;
  }
  return true;
}

H5I_type_t object_type(hid_t loc, const std::string& path) {
  if (!link_exists(loc, path)) return H5I_BADID;
  const hid_t obj = H5Oopen(loc, path.c_str(), H5P_DEFAULT);
  if (obj < 0) return H5I_BADID;
  const H5I_type_t type = H5Iget_type(obj);
  H5Oclose(obj);
  return type;
}

// A new variable-length string type; the caller owns it.
hid_t vlen_string_type(H5T_cset_t cset) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, cset);
  return type;
}

}  // namespace

Hdf5Group::Hdf5Group(std::shared_ptr<detail::Hdf5Handle> handle, std::string file_name, std::string path)
    : handle_(std::move(handle)), file_name_(std::move(file_name)), path_(std::move(path)) {}

void Hdf5Group::fail(const std::string& what) const { fail_file(file_name_, what); }

std::string Hdf5Group::child_path(const std::string& name) const {
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

std::vector<std::string> Hdf5Group::children() const {
  QuietErrors quiet;
  H5G_info_t info;
  if (H5Gget_info(handle_->id(), &info) < 0) fail("cannot list group '" + path_ + "'");
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = H5Lget_name_by_idx(handle_->id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT);
    if (size < 0) fail("cannot list group '" + path_ + "'");
    std::string name(static_cast<std::size_t>(size) + 1, '\0');
    H5Lget_name_by_idx(handle_->id(), ".", H5_INDEX_NAME, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT);
    name.resize(static_cast<std::size_t>(size));
    names.push_back(std::move(name));
  }
  return names;
}

bool Hdf5Group::has_group(const std::string& name) const {
  QuietErrors quiet;
  return object_type(handle_->id(), name) == H5I_GROUP;
}

bool Hdf5Group::has_dataset(const std::string& name) const {
  QuietErrors quiet;
  return object_type(handle_->id(), name) == H5I_DATASET;
}

Hdf5Group Hdf5Group::group(const std::string& name) const {
  QuietErrors quiet;
  if (object_type(handle_->id(), name) != H5I_GROUP) fail("no group '" + child_path(name) + "'");
  const hid_t id = H5Gopen2(handle_->id(), name.c_str(), H5P_DEFAULT);
  checked(id, file_name_, "cannot open group '" + child_path(name) + "'");
  return Hdf5Group(std::make_shared<Hdf5Handle>(id), file_name_, child_path(name));
}

Hdf5Group Hdf5Group::create_group(const std::string& name) {
  QuietErrors quiet;
  Hdf5Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  const hid_t id = H5Gcreate2(handle_->id(), name.c_str(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) fail("cannot create group '" + child_path(name) + "'");
  return Hdf5Group(std::make_shared<Hdf5Handle>(id), file_name_, child_path(name));
}

bool Hdf5Group::has_attribute(const std::string& name) const {
  QuietErrors quiet;
  return H5Aexists(handle_->id(), name.c_str()) > 0;
}

std::string Hdf5Group::string_attribute(const std::string& name) const {
  const std::vector<std::string> values = string_list_attribute(name);
  if (values.size() != 1)
    fail("attribute '" + name + "' of '" + path_ + "' holds " + std::to_string(values.size()) +
         " strings, expected one");
  return values[0];
}

std::vector<std::string> Hdf5Group::string_list_attribute(const std::string& name) const {
  QuietErrors quiet;
  const std::string where = "attribute '" + name + "' of '" + path_ + "'";
  if (H5Aexists(handle_->id(), name.c_str()) <= 0) fail("no " + where);
  Hdf5Handle attr(checked(H5Aopen(handle_->id(), name.c_str(), H5P_DEFAULT), file_name_, "cannot open " + where));
  Hdf5Handle type(checked(H5Aget_type(attr.id()), file_name_, "cannot read " + where));
  Hdf5Handle space(checked(H5Aget_space(attr.id()), file_name_, "cannot read " + where));
  const hssize_t n = H5Sget_simple_extent_npoints(space.id());
  if (n < 0) fail("cannot read " + where);
  if (n == 0) return {};
  if (H5Tget_class(type.id()) != H5T_STRING) fail(where + " is not a string");
  const auto count = static_cast<std::size_t>(n);
  std::vector<std::string> values;
  if (H5Tis_variable_str(type.id()) > 0) {
    Hdf5Handle mem(vlen_string_type(H5Tget_cset(type.id())));
    std::vector<char*> buf(count, nullptr);
    if (H5Aread(attr.id(), mem.id(), buf.data()) < 0) fail("cannot read " + where);
    for (char* s : buf) {
      values.emplace_back(s ? s : "");
      H5free_memory(s);
    }
    return values;
  }
  const std::size_t size = H5Tget_size(type.id());
  Hdf5Handle mem(H5Tcopy(type.id()));
  std::vector<char> buf(count * size);
  if (H5Aread(attr.id(), mem.id(), buf.data()) < 0) fail("cannot read " + where);
  const bool space_padded = H5Tget_strpad(type.id()) == H5T_STR_SPACEPAD;
  for (std::size_t i = 0; i < count; ++i) {
    std::string s(buf.data() + i * size, size);
    s.resize(std::min(s.size(), s.find('\0')));
    if (space_padded) s.erase(s.find_last_not_of(' ') + 1);
    values.push_back(std::move(s));
  }
  return values;
}

void Hdf5Group::set_string_attribute(const std::string& name, const std::string& value) {
  QuietErrors quiet;
  const std::string where = "attribute '" + name + "' of '" + path_ + "'";
  if (H5Aexists(handle_->id(), name.c_str()) > 0) H5Adelete(handle_->id(), name.c_str());
  Hdf5Handle type(vlen_string_type(H5T_CSET_UTF8));
  Hdf5Handle space(H5Screate(H5S_SCALAR));
  Hdf5Handle attr(checked(H5Acreate2(handle_->id(), name.c_str(), type.id(), space.id(), H5P_DEFAULT, H5P_DEFAULT),
                          file_name_, "cannot create " + where));
  const char* data = value.c_str();
  if (H5Awrite(attr.id(), type.id(), &data) < 0) fail("cannot write " + where);
}

Shape Hdf5Group::dataset_shape(const std::string& name) const {
  QuietErrors quiet;
  if (object_type(handle_->id(), name) != H5I_DATASET) fail("no dataset '" + child_path(name) + "'");
  Hdf5Handle ds(checked(H5Dopen2(handle_->id(), name.c_str(), H5P_DEFAULT), file_name_,
                        "cannot open dataset '" + child_path(name) + "'"));
  Hdf5Handle space(checked(H5Dget_space(ds.id()), file_name_, "cannot read dataset '" + child_path(name) + "'"));
  const int rank = H5Sget_simple_extent_ndims(space.id());
  if (rank < 0) fail("cannot read the shape of dataset '" + child_path(name) + "'");
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  H5Sget_simple_extent_dims(space.id(), dims.data(), nullptr);
  return Shape(std::vector<Index>(dims.begin(), dims.end()));
}

Tensor Hdf5Group::read_dataset(const std::string& name) const {
  const Shape shape = dataset_shape(name);
  QuietErrors quiet;
  const std::string where = "dataset '" + child_path(name) + "'";
  Hdf5Handle ds(checked(H5Dopen2(handle_->id(), name.c_str(), H5P_DEFAULT), file_name_, "cannot open " + where));
  Hdf5Handle type(checked(H5Dget_type(ds.id()), file_name_, "cannot read " + where));
  const H5T_class_t cls = H5Tget_class(type.id());
  if (cls != H5T_FLOAT && cls != H5T_INTEGER) fail(where + " does not hold numbers");
  Tensor out{shape};
  if (out.numel() > 0 && H5Dread(ds.id(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out.raw_data()) < 0)
    fail("cannot read " + where);
  return out;
}

void Hdf5Group::write_dataset(const std::string& name, const Tensor& value) {
  const std::string where = "dataset '" + child_path(name) + "'";
  if (value.dtype() != DType::float32) fail(where + ": only float32 tensors are written");
  const Tensor host = value.to(Device::cpu());
  QuietErrors quiet;
  const std::vector<hsize_t> dims(host.shape().begin(), host.shape().end());
  Hdf5Handle space(dims.empty() ? H5Screate(H5S_SCALAR)
                                : H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr));
  Hdf5Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  Hdf5Handle ds(checked(
      H5Dcreate2(handle_->id(), name.c_str(), H5T_IEEE_F32LE, space.id(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT),
      file_name_, "cannot create " + where));
  if (host.numel() > 0 && H5Dwrite(ds.id(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, host.raw_data()) < 0)
    fail("cannot write " + where);
}

Hdf5File Hdf5File::open(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec))
    throw std::runtime_error("HDF5 file '" + path + "': cannot open: " + std::strerror(ENOENT));
  QuietErrors quiet;
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 == 0) throw std::runtime_error("HDF5 file '" + path + "': not an HDF5 file");
  if (is_hdf5 < 0) fail_file(path, "cannot open");
  Hdf5Handle file(checked(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), path, "cannot open"));
  const hid_t root = checked(H5Gopen2(file.id(), "/", H5P_DEFAULT), path, "cannot open the root group");
  return Hdf5File(std::make_shared<Hdf5Handle>(root), path, "/");
}

Hdf5File Hdf5File::create_in_memory(const std::string& name) {
  QuietErrors quiet;
  Hdf5Handle fapl(checked(H5Pcreate(H5P_FILE_ACCESS), name, "cannot create"));
  // Grows in 1 MiB steps and never touches the disk (no backing store).
  H5Pset_fapl_core(fapl.id(), std::size_t{1} << 20, 0);
  Hdf5Handle file(checked(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()), name, "cannot create"));
  const hid_t root = checked(H5Gopen2(file.id(), "/", H5P_DEFAULT), name, "cannot open the root group");
  return Hdf5File(std::make_shared<Hdf5Handle>(root), name, "/");
}

std::string Hdf5File::image() const {
  QuietErrors quiet;
  Hdf5Handle file(checked(H5Iget_file_id(handle().id()), file_name(), "cannot find the file"));
  if (H5Fflush(file.id(), H5F_SCOPE_LOCAL) < 0) fail("cannot flush");
  const ssize_t size = H5Fget_file_image(file.id(), nullptr, 0);
  if (size < 0) fail("cannot get the file image");
  std::string bytes(static_cast<std::size_t>(size), '\0');
  if (H5Fget_file_image(file.id(), bytes.data(), bytes.size()) < 0) fail("cannot get the file image");
  return bytes;
}

}  // namespace tower::io

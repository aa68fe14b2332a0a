#include "api/io/hdf5_writer.h"

#include <hdf5.h>

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

// A new variable-length string type; the caller owns it.
hid_t vlen_string_type(H5T_cset_t cset) {
  const hid_t type = H5Tcopy(H5T_C_S1);
  H5Tset_size(type, H5T_VARIABLE);
  H5Tset_cset(type, cset);
  return type;
}

}  // namespace

Hdf5WriteGroup::Hdf5WriteGroup(std::shared_ptr<detail::Hdf5Handle> handle, std::string file_name, std::string path)
    : handle_(std::move(handle)), file_name_(std::move(file_name)), path_(std::move(path)) {}

void Hdf5WriteGroup::fail(const std::string& what) const { fail_file(file_name_, what); }

std::string Hdf5WriteGroup::child_path(const std::string& name) const {
  return path_ == "/" ? "/" + name : path_ + "/" + name;
}

Hdf5WriteGroup Hdf5WriteGroup::create_group(const std::string& name) {
  QuietErrors quiet;
  Hdf5Handle lcpl(H5Pcreate(H5P_LINK_CREATE));
  H5Pset_create_intermediate_group(lcpl.id(), 1);
  const hid_t id = H5Gcreate2(handle_->id(), name.c_str(), lcpl.id(), H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) fail("cannot create group '" + child_path(name) + "'");
  return Hdf5WriteGroup(std::make_shared<Hdf5Handle>(id), file_name_, child_path(name));
}

void Hdf5WriteGroup::set_string_attribute(const std::string& name, const std::string& value) {
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

void Hdf5WriteGroup::write_dataset(const std::string& name, const Tensor& value) {
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

Hdf5WriteGroup Hdf5Writer::create(const std::string& name) {
  QuietErrors quiet;
  Hdf5Handle fapl(checked(H5Pcreate(H5P_FILE_ACCESS), name, "cannot create"));
  // Grows in 1 MiB steps and never touches the disk (no backing store).
  H5Pset_fapl_core(fapl.id(), std::size_t{1} << 20, 0);
  Hdf5Handle file(checked(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.id()), name, "cannot create"));
  const hid_t root = checked(H5Gopen2(file.id(), "/", H5P_DEFAULT), name, "cannot open the root group");
  return Hdf5WriteGroup(std::make_shared<Hdf5Handle>(root), name, "/");
}

Hdf5Writer::Hdf5Writer(const std::string& name) : Hdf5WriteGroup(create(name)) {}

std::string Hdf5Writer::image() const {
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

// ModelImpl and Model: training, prediction, weights and model files.
#include <cstring>
#include <unordered_map>

#include "api/core/allocator.h"
#include "api/io/keras_weights.h"
#include "api/io/weights_file.h"
#include "api/models/model.h"
#include "api/models/registry.h"

namespace tower {

void ModelImpl::compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
                        std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights) {
  require_graph("compile()");
  if (detail::DistributionPtr d = detail::current_distribution(); d && d != distribution_) {
    distribution_ = std::move(d);
    replicas_.reset();
    replicas_made_ = false;
  }
  trainer_ = std::make_unique<detail::Trainer>(*this, std::move(optimizer), std::move(losses), std::move(metrics),
                                               std::move(loss_weights));
}

detail::Trainer& ModelImpl::trainer() const {
  if (!trainer_) throw std::logic_error("Model '" + name() + "' is not compiled: call compile() first");
  return *trainer_;
}

detail::Replicas* ModelImpl::replicas() {
  if (!replicas_made_ && distribution_) {
    require_graph("running the model");
    replicas_ = distribution_->replicate(*this);
    replicas_made_ = true;
  }
  return replicas_.get();
}

Plan& ModelImpl::plan_for(Index batch_size, bool training) {
  require_graph("running the model");
  auto& slot = plans_[{batch_size, training}];
  if (slot && training) {
    // Freezing or unfreezing a layer changes what gets gradients: such a plan is stale.
    const std::vector<VariablePtr> now = trainable_weights();
    if (now != slot->trainable_weights()) slot.reset();
  }
  if (!slot) {
    PlanOptions o;
    o.batch_size = batch_size;
    o.training = training;
    o.backward = training;
    slot = std::make_unique<Plan>(*this, o);
  }
  return *slot;
}

namespace {

// Binds rows [begin, end) of the batch's first plan.num_inputs() components as the plan's inputs; float32 inputs
// are used in place, others converted into `staged`.
void bind_predict_inputs(const std::string& model, Plan& plan, const data::Element& batch, Index begin, Index end,
                         std::vector<Tensor>& staged) {
  const bool whole = begin == 0 && end == batch[0].dim(0);
  for (int i = 0; i < plan.num_inputs(); ++i) {
    const std::size_t k = static_cast<std::size_t>(i);
    const Tensor x = whole ? batch[k] : batch[k].slice(begin, end);
    if (x.dtype() == DType::float32) {
      plan.set_input(i, x);
      continue;
    }
    staged[k] = Tensor(x.shape());
    float* d = staged[k].data<float>();
    if (x.dtype() == DType::uint8)
      for (Index j = 0; j < x.numel(); ++j) d[j] = x.data<std::uint8_t>()[j];
    else if (x.dtype() == DType::int32)
      for (Index j = 0; j < x.numel(); ++j) d[j] = static_cast<float>(x.data<std::int32_t>()[j]);
    else
      throw std::invalid_argument("Model '" + model + "': predict() input " + std::to_string(i) + " of dtype " +
                                  dtype_name(x.dtype()));
    plan.set_input(i, staged[k]);
  }
}

}  // namespace

std::vector<Tensor> ModelImpl::predict(const data::Dataset& data, const PredictOptions& options) {
  std::vector<callbacks::CallbackPtr> cbs = options.callbacks;
  for (auto& cb : cbs) cb->set_model(this);
  for (auto& cb : cbs) cb->on_predict_begin({});
  const std::size_t ni = inputs().size(), no = outputs().size();
  std::vector<std::vector<Tensor>> parts(no);
  std::vector<Tensor> staged(ni);
  detail::Replicas* reps = replicas();
  const int local = reps ? reps->num_local() : 1;
  std::vector<Plan*> replica_plans(static_cast<std::size_t>(local));
  std::vector<std::vector<Tensor>> replica_staged(static_cast<std::size_t>(local), std::vector<Tensor>(ni));
  std::vector<Tensor> replica_outputs(static_cast<std::size_t>(local));
  auto it = data.make_iterator();
  std::int64_t s = 0;
  Index total = 0;
  while (!options.steps || s < *options.steps) {
    std::optional<data::Element> batch = it->next();
    if (!batch) break;
    if (batch->size() < ni)
      throw std::invalid_argument("Model '" + name() + "': predict() got " + std::to_string(batch->size()) +
                                  " components, the model has " + std::to_string(ni) + " inputs");
    for (auto& cb : cbs) cb->on_predict_batch_begin(s, {});
    const Index n = (*batch)[0].dim(0);
    if (!reps) {
      Plan& plan = plan_for(n, false);
      bind_predict_inputs(name(), plan, *batch, 0, n, staged);
      plan.forward();
      for (std::size_t o = 0; o < no; ++o) parts[o].push_back(plan.output(static_cast<int>(o)).clone());
    } else {
      for (int r = 0; r < local; ++r) {
        const auto [begin, end] = reps->slice(n, r);
        replica_plans[static_cast<std::size_t>(r)] = end > begin ? &reps->plan(r, end - begin, false) : nullptr;
      }
      auto forward = [&](int r) {
        const auto [begin, end] = reps->slice(n, r);
        Plan& plan = *replica_plans[static_cast<std::size_t>(r)];
        bind_predict_inputs(name(), plan, *batch, begin, end, replica_staged[static_cast<std::size_t>(r)]);
        plan.forward();
      };
      reps->run(n, detail::ReplicaWork(forward), false);
      for (std::size_t o = 0; o < no; ++o) {
        for (int r = 0; r < local; ++r) {
          const Plan* plan = replica_plans[static_cast<std::size_t>(r)];
          replica_outputs[static_cast<std::size_t>(r)] = plan ? plan->output(static_cast<int>(o)) : Tensor();
        }
        Tensor gathered(outputs()[o].shape().with_batch(n));
        reps->gather(n, replica_outputs, gathered);
        parts[o].push_back(gathered);
      }
    }
    total += n;
    for (auto& cb : cbs) cb->on_predict_batch_end(s, {});
    ++s;
  }
  std::vector<Tensor> result;
  for (std::size_t o = 0; o < no; ++o) {
    Shape shape = outputs()[o].shape().with_batch(total);
    Tensor out(shape);
    std::size_t offset = 0;
    for (const Tensor& p : parts[o]) {
      std::memcpy(static_cast<char*>(out.raw_data()) + offset, p.raw_data(), p.nbytes());
      offset += p.nbytes();
    }
    result.push_back(out);
  }
  for (auto& cb : cbs) cb->on_predict_end({});
  return result;
}

std::vector<Tensor> ModelImpl::get_weights() const {
  std::vector<Tensor> out;
  for (const VariablePtr& v : weights()) out.push_back(v->value.clone());
  return out;
}

void ModelImpl::set_weights(const std::vector<Tensor>& values) {
  const std::vector<VariablePtr> ws = weights();
  if (values.size() != ws.size())
    throw std::invalid_argument("Model '" + name() + "': set_weights() got " + std::to_string(values.size()) +
                                " arrays for " + std::to_string(ws.size()) + " weights");
  for (std::size_t i = 0; i < ws.size(); ++i)
    if (values[i].shape() != ws[i]->value.shape())
      throw std::invalid_argument("Model '" + name() + "': weight '" + ws[i]->path + "' has shape " +
                                  ws[i]->value.shape().to_string() + ", got " + values[i].shape().to_string());
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i]->value.copy_from(values[i]);
}

void ModelImpl::save_weights(const std::string& path) const {
  if (io::keras_weights_format(path) != io::KerasWeightsFormat::none) return io::save_keras_weights(*this, path);
  std::vector<io::NamedTensor> named;
  for (const VariablePtr& v : weights()) named.push_back({v->path, v->value});
  Config extra = Config::map();
  extra.set("model", name());
  io::write_weights_file(path, named, extra);
}

void ModelImpl::load_weights(const std::string& path) {
  if (io::keras_weights_format(path) != io::KerasWeightsFormat::none) return io::load_keras_weights(*this, path);
  assign_weights(io::read_weights_file(path), path);
}

void ModelImpl::assign_weights(const io::WeightsFile& file, const std::string& path) {
  const std::vector<VariablePtr> ws = weights();
  if (file.weights.size() != ws.size())
    throw std::invalid_argument("weights file '" + path + "' holds " + std::to_string(file.weights.size()) +
                                " weights, model '" + name() + "' has " + std::to_string(ws.size()) +
                                " (a file from another model?)");
  for (std::size_t i = 0; i < ws.size(); ++i)
    if (file.weights[i].value.shape() != ws[i]->value.shape())
      throw std::invalid_argument("weights file '" + path + "': weight " + std::to_string(i) + " ('" +
                                  file.weights[i].name + "') has shape " + file.weights[i].value.shape().to_string() +
                                  ", model weight '" + ws[i]->path + "' has shape " +
                                  ws[i]->value.shape().to_string() + " (a file from another model?)");
  for (std::size_t i = 0; i < ws.size(); ++i) ws[i]->value.copy_from(file.weights[i].value);
}

// ---- model configs ------------------------------------------------------------------------------------------

std::shared_ptr<ModelImpl> model_from_config(const Config& serialized) {
  const std::string& cls = serialized.at("class_name").as_string();
  const Config& cfg = serialized.at("config");
  const std::string name = cfg.contains("name") ? cfg.at("name").as_string() : "";
  if (cls == "Sequential") {
    std::vector<LayerPtr> layers;
    for (const Config& l : cfg.at("layers").as_list()) layers.push_back(layer_from_config(l));
    auto m = std::make_shared<SequentialImpl>(std::move(layers), name);
    return m;
  }
  if (cls != "Functional") throw ConfigError("model class '" + cls + "' (expected Functional or Sequential)");
  // Layers are made first, then their calls replayed until every node is placed: a shared layer's later call
  // may need a layer listed after it.
  struct Entry {
    LayerPtr layer;
    const Config* inbound;
    std::size_t done = 0;
  };
  std::vector<Entry> entries;
  std::unordered_map<std::string, std::size_t> by_name;
  std::unordered_map<std::string, std::vector<std::vector<SymbolicTensor>>> outputs;
  for (const Config& l : cfg.at("layers").as_list()) {
    Config layer_cfg = l;
    LayerPtr layer;
    if (l.at("class_name").as_string() == "Functional" || l.at("class_name").as_string() == "Sequential")
      layer = model_from_config(l);
    else
      layer = layer_from_config(l);
    const std::string lname = l.contains("name") ? l.at("name").as_string() : layer->name();
    by_name[lname] = entries.size();
    entries.push_back({layer, &l.at("inbound_nodes")});
    if (auto in = std::dynamic_pointer_cast<InputLayerImpl>(layer)) outputs[lname].push_back({in->output()});
  }
  const auto resolve = [&](const Config& ref, SymbolicTensor& out) {
    const auto& r = ref.as_list();
    auto it = outputs.find(r.at(0).as_string());
    if (it == outputs.end()) return false;
    const auto node = static_cast<std::size_t>(r.at(1).as_int());
    if (node >= it->second.size()) return false;
    out = it->second[node].at(static_cast<std::size_t>(r.at(2).as_int()));
    return true;
  };
  bool progress = true;
  while (progress) {
    progress = false;
    for (auto& e : entries) {
      const auto& calls = e.inbound->as_list();
      while (e.done < calls.size()) {
        std::vector<SymbolicTensor> args;
        bool ready = true;
        for (const Config& ref : calls[e.done].as_list()) {
          SymbolicTensor t;
          if (!resolve(ref, t)) {
            ready = false;
            break;
          }
          args.push_back(t);
        }
        if (!ready) break;
        outputs[e.layer->name()].push_back((*e.layer)(args));
        ++e.done;
        progress = true;
      }
    }
  }
  for (const auto& e : entries)
    if (e.done < e.inbound->size())
      throw ConfigError("model config: the inputs of layer '" + e.layer->name() + "' cannot be resolved");
  const auto refs = [&](const Config& list) {
    std::vector<SymbolicTensor> ts;
    for (const Config& ref : list.as_list()) {
      SymbolicTensor t;
      if (!resolve(ref, t)) throw ConfigError("model config: unresolved input/output " + ref.to_json());
      ts.push_back(t);
    }
    return ts;
  };
  return std::make_shared<ModelImpl>(refs(cfg.at("input_layers")), refs(cfg.at("output_layers")), name);
}

namespace {
const bool models_registered = [] {
  register_layer("Functional", [](const Config& c) -> LayerPtr {
    Config s = Config::map();
    s.set("class_name", "Functional");
    s.set("config", c);
    return model_from_config(s);
  });
  register_layer("Sequential", [](const Config& c) -> LayerPtr {
    Config s = Config::map();
    s.set("class_name", "Sequential");
    s.set("config", c);
    return model_from_config(s);
  });
  return true;
}();
}  // namespace

// ---- Model handle -------------------------------------------------------------------------------------------

void Model::compile(optimizers::OptimizerPtr optimizer, losses::LossPtr loss, std::vector<metrics::MetricPtr> metrics) {
  impl_->compile(std::move(optimizer), {std::move(loss)}, {std::move(metrics)}, {});
}

void Model::compile(optimizers::OptimizerPtr optimizer, std::vector<losses::LossPtr> losses,
                    std::vector<std::vector<metrics::MetricPtr>> metrics, std::vector<double> loss_weights) {
  impl_->compile(std::move(optimizer), std::move(losses), std::move(metrics), std::move(loss_weights));
}

callbacks::History Model::fit(const data::Dataset& data, int epochs) {
  FitOptions o;
  o.epochs = epochs;
  return fit(data, o);
}

callbacks::History Model::fit(const data::Dataset& data, FitOptions options) {
  return impl_->trainer().fit(data, options);
}

callbacks::History Model::fit(const Tensor& x, const Tensor& y, FitOptions options) {
  if (x.rank() == 0 || y.rank() == 0 || x.dim(0) != y.dim(0))
    throw std::invalid_argument("Model '" + name() + "': fit() got x of shape " + x.shape().to_string() +
                                " and y of shape " + y.shape().to_string() + ": they need the same number of examples");
  if (options.validation_split < 0 || options.validation_split >= 1)
    throw std::invalid_argument("Model '" + name() + "': validation_split must be in [0, 1), got " +
                                std::to_string(options.validation_split));
  Tensor xt = x, yt = y;
  if (options.validation_split > 0) {
    const Index n = x.dim(0);
    const Index split = n - static_cast<Index>(static_cast<double>(n) * options.validation_split);
    xt = x.slice(0, split);
    yt = y.slice(0, split);
    options.validation_data =
        data::Dataset::from_tensor_slices({x.slice(split, n), y.slice(split, n)}).batch(options.batch_size);
  }
  data::Dataset ds = data::Dataset::from_tensor_slices({xt, yt});
  if (options.shuffle) ds = ds.shuffle(xt.dim(0));
  return impl_->trainer().fit(ds.batch(options.batch_size), options);
}

callbacks::Logs Model::evaluate(const data::Dataset& data, EvaluateOptions options) {
  return impl_->trainer().evaluate(data, options);
}

callbacks::Logs Model::evaluate(const Tensor& x, const Tensor& y, EvaluateOptions options) {
  return evaluate(data::Dataset::from_tensor_slices({x, y}).batch(options.batch_size), options);
}

Tensor Model::predict(const Tensor& x, PredictOptions options) {
  if (impl_->outputs().size() != 1)
    throw std::invalid_argument("Model '" + name() + "' has several outputs: use predict(Dataset)");
  return impl_->predict(data::Dataset::from_tensor_slices({x}).batch(options.batch_size), options)[0];
}

std::vector<Tensor> Model::predict(const data::Dataset& data, PredictOptions options) {
  return impl_->predict(data, options);
}

callbacks::Logs Model::train_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  data::Element batch{x, y};
  if (sample_weight.defined()) batch.push_back(sample_weight);
  return impl_->trainer().train_on_batch(batch);
}

callbacks::Logs Model::test_on_batch(const Tensor& x, const Tensor& y, const Tensor& sample_weight) {
  data::Element batch{x, y};
  if (sample_weight.defined()) batch.push_back(sample_weight);
  return impl_->trainer().test_on_batch(batch);
}

void Model::save(const std::string& path) const {
  std::vector<io::NamedTensor> named;
  for (const VariablePtr& v : impl_->weights()) named.push_back({v->path, v->value});
  Config extra = Config::map();
  extra.set("model", impl_->serialize());
  io::write_weights_file(path, named, extra);
}

Model Model::load(const std::string& path) {
  const io::WeightsFile file = io::read_weights_file(path);
  // save() stores the model's config (a map) under "model"; save_weights() only the model's name.
  if (!file.extra.contains("model") || !file.extra.at("model").is_map())
    throw std::invalid_argument("'" + path + "' holds weights only (save_weights); load it with load_weights()");
  // Every weight the stored architecture creates is in the file, so building it needs about the file's tensors
  // (twice: initial values, then the stored ones) and little else; a damaged config asking for far more is an
  // error before it is allocated.
  std::size_t stored = 0;
  for (const io::NamedTensor& t : file.weights) stored += t.value.nbytes();
  std::shared_ptr<ModelImpl> impl;
  try {
    AllocationLimit limit(4 * stored + (std::size_t{64} << 20),
                          "model file '" + path + "': the stored architecture does not match the stored weights");
    impl = model_from_config(file.extra.at("model"));
  } catch (const ConfigError& e) {
    throw ConfigError("model file '" + path + "': " + e.what());
  }
  Model m(impl);
  m->assign_weights(file, path);
  return m;
}

}  // namespace tower

#!/usr/bin/env python3
"""Reference values for Tower's optimizers and learning-rate schedules, computed by Keras itself.

Install and run (from the repository root; any machine, CPU only):

    python3 -m pip install tensorflow-cpu keras          # Keras 3 on the TensorFlow backend
    python3 tests/reference/make_optimizer_fixtures.py    # rewrites tests/reference/optimizers/*.json

Optimizers: for each case in OPTIMIZER_CASES the script builds the Keras optimizer from a kwargs dict (a
learning-rate schedule is given as {"class_name", "config"} and built with Keras' own deserializer), makes two
variables, "kernel" [3, 4] (or the case's shapes) and "bias" [5], with seeded values in [-1, 1), calls
exclude_from_weight_decay(var_names=...) where the case names some, and applies 5 steps of seeded gradients in
[-1, 1) with optimizer.apply_gradients. One file per case, tests/reference/optimizers/<case>.json:

    optimizer      {"class_name", "config"}: config is exactly the kwargs given to Keras (Tower reads the same keys)
    keras_config   optimizer.get_config() as Keras writes it (name, use_ema, ..., a schedule with its "module")
    variables      [{"name", "shape", "data"}]                 the values before the first step
    gradients      [[{"name", "shape", "data"}, ...], ...]      one list per step, in variable order
    after          [[{"name", "shape", "data"}, ...], ...]      the variables after each step
    learning_rates [float, ...]                                 optimizer.learning_rate before each step
    exclude_from_weight_decay [str, ...]   (only where given) the var_names passed to exclude_from_weight_decay
    finalized      [{"name", "shape", "data"}]   (use_ema only) the variables after finalize_variable_values

Schedules: tests/reference/optimizers/schedules.json is a list of {"name", "schedule": {"class_name", "config"},
"steps": [int], "values": [float]}, the schedule called at each step (Keras computes in float32).

Fit: for each case in FIT_CASES, tests/reference/optimizers/fit/<case>.json records model.fit of Dense(3) on 4
features (mse, 16 seeded examples, batch_size 4, shuffle=False, 3 epochs) with the optimizer built from the
config (and exclude_from_weight_decay where given): "optimizer", "exclude_from_weight_decay", "x", "y",
"kernel" and "bias" before fit, "loss" per epoch, and "after": kernel and bias after fit (which, with use_ema,
has swapped in the moving averages).

Floats are written as the shortest decimal string that reads back as the same float32. The C++ tests are
tests/optimizers/keras_optimizers_test.cpp and tests/optimizers/schedules_test.cpp.
"""
import json
import os
import sys
import zlib

os.environ.setdefault("KERAS_BACKEND", "tensorflow")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")

import numpy as np  # noqa: E402
import keras  # noqa: E402

OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "optimizers")
STEPS = 5
VARIABLES = [("kernel", (3, 4)), ("bias", (5,))]


def schedule(class_name, **config):
    return {"class_name": class_name, "config": config}


def case(name, class_name, config, exclude_from_weight_decay=None, variables=None):
    return dict(name=name, class_name=class_name, config=config, exclude=exclude_from_weight_decay,
                variables=variables or VARIABLES)


OPTIMIZER_CASES = [
    case("SGD_default", "SGD", {}),
    case("SGD_momentum", "SGD", {"learning_rate": 0.1, "momentum": 0.9}),
    case("SGD_nesterov", "SGD", {"learning_rate": 0.1, "momentum": 0.9, "nesterov": True}),
    case("SGD_momentum_weight_decay_clipnorm", "SGD",
         {"learning_rate": 0.1, "momentum": 0.5, "weight_decay": 0.1, "clipnorm": 1.0}),
    case("SGD_piecewise_schedule_weight_decay", "SGD",
         {"learning_rate": schedule("PiecewiseConstantDecay", boundaries=[1, 3], values=[0.2, 0.1, 0.05]),
          "momentum": 0.9, "weight_decay": 0.5}),
    case("Adam_default", "Adam", {}),
    case("Adam_lr", "Adam", {"learning_rate": 0.05}),
    case("Adam_amsgrad", "Adam",
         {"learning_rate": 0.05, "beta_1": 0.8, "beta_2": 0.99, "epsilon": 1e-3, "amsgrad": True}),
    case("Adam_clipvalue", "Adam", {"learning_rate": 0.02, "clipvalue": 0.5}),
    case("Adam_exponential_schedule", "Adam",
         {"learning_rate": schedule("ExponentialDecay", initial_learning_rate=0.05, decay_steps=2, decay_rate=0.5)}),
    case("Adam_weight_decay_global_clipnorm", "Adam",
         {"learning_rate": 0.03, "weight_decay": 0.2, "global_clipnorm": 1.5}),
    case("AdamW_default", "AdamW", {"learning_rate": 0.02}),
    case("AdamW_amsgrad_clipnorm", "AdamW",
         {"learning_rate": 0.05, "weight_decay": 0.1, "beta_1": 0.7, "amsgrad": True, "clipnorm": 0.8}),
    case("RMSprop_default", "RMSprop", {"learning_rate": 0.01}),
    case("RMSprop_centered_momentum", "RMSprop",
         {"learning_rate": 0.01, "rho": 0.8, "momentum": 0.9, "epsilon": 1e-4, "centered": True}),
    case("RMSprop_momentum_clipvalue", "RMSprop", {"learning_rate": 0.02, "momentum": 0.5, "clipvalue": 0.4}),
    case("RMSprop_centered_cosine_schedule", "RMSprop",
         {"learning_rate": schedule("CosineDecay", initial_learning_rate=0.0, decay_steps=4, alpha=0.1,
                                    warmup_target=0.05, warmup_steps=2),
          "centered": True}),
    case("Adagrad_default", "Adagrad", {"learning_rate": 0.1}),
    case("Adagrad_accumulator_weight_decay", "Adagrad",
         {"learning_rate": 0.2, "initial_accumulator_value": 0.5, "epsilon": 1e-3, "weight_decay": 0.2}),
    case("Adadelta_default", "Adadelta", {"learning_rate": 1.0}),
    case("Adadelta_rho_epsilon_clipvalue", "Adadelta",
         {"learning_rate": 2.0, "rho": 0.5, "epsilon": 1e-4, "clipvalue": 0.3}),
    case("Adamax_default", "Adamax", {"learning_rate": 0.05}),
    case("Adamax_global_clipnorm_schedule", "Adamax",
         {"learning_rate": schedule("InverseTimeDecay", initial_learning_rate=0.1, decay_steps=1, decay_rate=0.5),
          "beta_1": 0.5, "beta_2": 0.9, "global_clipnorm": 1.0}),
    case("Nadam_default", "Nadam", {"learning_rate": 0.02}),
    case("Nadam_betas_weight_decay_clipnorm", "Nadam",
         {"learning_rate": 0.05, "beta_1": 0.8, "beta_2": 0.95, "epsilon": 1e-3, "weight_decay": 0.1,
          "clipnorm": 1.2}),
    case("Nadam_polynomial_schedule", "Nadam",
         {"learning_rate": schedule("PolynomialDecay", initial_learning_rate=0.05, decay_steps=3,
                                    end_learning_rate=0.01, power=2.0)}),
    case("Lion_default", "Lion", {}),
    case("Lion_betas_weight_decay", "Lion",
         {"learning_rate": 0.05, "beta_1": 0.5, "beta_2": 0.9, "weight_decay": 0.1}),
    case("Ftrl_default", "Ftrl", {"learning_rate": 0.1}),
    case("Ftrl_regularization_beta", "Ftrl",
         {"learning_rate": 0.2, "learning_rate_power": -0.7, "initial_accumulator_value": 0.3,
          "l1_regularization_strength": 0.01, "l2_regularization_strength": 0.05,
          "l2_shrinkage_regularization_strength": 0.02, "beta": 0.1}),
    case("Lamb_default", "Lamb", {}),
    case("Lamb_betas_clipnorm_schedule", "Lamb",
         {"learning_rate": schedule("ExponentialDecay", initial_learning_rate=0.05, decay_steps=2, decay_rate=0.5),
          "beta_1": 0.8, "beta_2": 0.95, "epsilon": 1e-4, "clipnorm": 1.0}),
    case("Adafactor_default", "Adafactor", {}),
    case("Adafactor_arguments_weight_decay", "Adafactor",
         {"learning_rate": 0.05, "beta_2_decay": -0.5, "epsilon_1": 1e-20, "epsilon_2": 1e-2,
          "clip_threshold": 0.5, "relative_step": False, "weight_decay": 0.1}),
    case("Adafactor_rank3_schedule", "Adafactor",
         {"learning_rate": schedule("PolynomialDecay", initial_learning_rate=0.5, decay_steps=4,
                                    end_learning_rate=0.1)},
         variables=[("kernel", (2, 3, 4)), ("bias", (5,))]),
    # The base optimizer's options, on several rules.
    case("Adam_use_ema", "Adam", {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.5}),
    case("SGD_use_ema_overwrite", "SGD",
         {"learning_rate": 0.1, "momentum": 0.9, "use_ema": True, "ema_momentum": 0.8,
          "ema_overwrite_frequency": 2}),
    case("Adam_gradient_accumulation_clipnorm_weight_decay", "Adam",
         {"learning_rate": 0.05, "gradient_accumulation_steps": 2, "clipnorm": 1.0, "weight_decay": 0.1}),
    case("Lamb_gradient_accumulation_use_ema", "Lamb",
         {"learning_rate": 0.05, "gradient_accumulation_steps": 2, "use_ema": True, "ema_momentum": 0.9,
          "ema_overwrite_frequency": 2}),
    case("Adafactor_gradient_accumulation", "Adafactor",
         {"learning_rate": 0.1, "gradient_accumulation_steps": 3}),
    case("AdamW_exclude_from_weight_decay", "AdamW", {"learning_rate": 0.05, "weight_decay": 0.2},
         exclude_from_weight_decay=["bias"]),
    case("Lion_exclude_from_weight_decay_use_ema", "Lion",
         {"learning_rate": 0.05, "weight_decay": 0.3, "use_ema": True},
         exclude_from_weight_decay=["ker"]),
]

FIT_CASES = [
    case("Lion", "Lion", {"learning_rate": 0.01}),
    case("Ftrl", "Ftrl", {"learning_rate": 0.2, "l1_regularization_strength": 0.001, "beta": 0.1}),
    case("Lamb", "Lamb", {"learning_rate": 0.02}),
    case("Adafactor", "Adafactor", {"learning_rate": 0.05}),
    case("Adam_ema_accumulation_exclude", "Adam",
         {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.9, "ema_overwrite_frequency": 3,
          "gradient_accumulation_steps": 2, "weight_decay": 0.1},
         exclude_from_weight_decay=["bias"]),
    case("Lamb_ema_accumulation", "Lamb",
         {"learning_rate": 0.05, "use_ema": True, "ema_momentum": 0.8, "gradient_accumulation_steps": 2}),
]

STANDARD_STEPS = [0, 1, 5, 10, 99, 100, 1000]

SCHEDULE_CASES = [
    ("ExponentialDecay", schedule("ExponentialDecay", initial_learning_rate=0.1, decay_steps=10, decay_rate=0.96),
     STANDARD_STEPS),
    ("ExponentialDecay_staircase",
     schedule("ExponentialDecay", initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5, staircase=True),
     STANDARD_STEPS + [9, 11, 19, 20, 21]),
    ("PiecewiseConstantDecay", schedule("PiecewiseConstantDecay", boundaries=[10, 100], values=[1.0, 0.5, 0.1]),
     STANDARD_STEPS + [9, 11, 101]),
    ("PolynomialDecay", schedule("PolynomialDecay", initial_learning_rate=0.1, decay_steps=100), STANDARD_STEPS),
    ("PolynomialDecay_power_cycle",
     schedule("PolynomialDecay", initial_learning_rate=0.1, decay_steps=30, end_learning_rate=0.01, power=0.5,
              cycle=True),
     STANDARD_STEPS + [29, 30, 31, 60, 61]),
    ("InverseTimeDecay", schedule("InverseTimeDecay", initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5),
     STANDARD_STEPS),
    ("InverseTimeDecay_staircase",
     schedule("InverseTimeDecay", initial_learning_rate=0.1, decay_steps=10, decay_rate=0.5, staircase=True),
     STANDARD_STEPS + [9, 11, 19, 20]),
    ("CosineDecay", schedule("CosineDecay", initial_learning_rate=0.1, decay_steps=100), STANDARD_STEPS + [50]),
    ("CosineDecay_alpha", schedule("CosineDecay", initial_learning_rate=0.1, decay_steps=100, alpha=0.2),
     STANDARD_STEPS + [50]),
    ("CosineDecay_warmup",
     schedule("CosineDecay", initial_learning_rate=0.0, decay_steps=100, alpha=0.1, warmup_target=0.2,
              warmup_steps=20),
     STANDARD_STEPS + [2, 15, 19, 20, 21, 50, 119, 120, 121]),
    ("CosineDecay_warmup_from_nonzero",
     schedule("CosineDecay", initial_learning_rate=0.01, decay_steps=50, warmup_target=0.1, warmup_steps=10),
     STANDARD_STEPS + [3, 9, 11, 30, 59, 60]),
    ("CosineDecayRestarts",
     schedule("CosineDecayRestarts", initial_learning_rate=0.1, first_decay_steps=7),
     STANDARD_STEPS + [6, 7, 8, 20, 21, 22]),
    ("CosineDecayRestarts_tmul1_mmul",
     schedule("CosineDecayRestarts", initial_learning_rate=0.1, first_decay_steps=7, t_mul=1.0, m_mul=0.5,
              alpha=0.1),
     STANDARD_STEPS + [6, 7, 8, 13, 14, 15]),
    ("CosineDecayRestarts_tmul3",
     schedule("CosineDecayRestarts", initial_learning_rate=0.2, first_decay_steps=5, t_mul=3.0, m_mul=0.8,
              alpha=0.05),
     STANDARD_STEPS + [4, 6, 19, 21, 64, 66]),
]


def seed_of(name, salt):
    return zlib.crc32(f"{name}/{salt}".encode())


def f32_str(v):
    # numpy prints the shortest string that reads back as the same float32.
    s = str(np.float32(v))
    if not np.isfinite(np.float32(v)):
        raise ValueError(f"non-finite value {s}")
    return s


def tensor_json(a, name):
    a = np.asarray(a, dtype=np.float32)
    return {"name": name, "shape": list(a.shape), "data": "[" + ", ".join(f32_str(v) for v in a.reshape(-1)) + "]"}


def build_schedule(spec):
    return keras.optimizers.schedules.deserialize(spec)


def make_optimizer_case(c):
    keras.utils.clear_session()
    kwargs = dict(c["config"])
    if isinstance(kwargs.get("learning_rate"), dict):
        kwargs["learning_rate"] = build_schedule(kwargs["learning_rate"])
    opt = getattr(keras.optimizers, c["class_name"])(**kwargs)
    if c["exclude"]:
        opt.exclude_from_weight_decay(var_names=c["exclude"])
    shapes = c["variables"]

    rng = np.random.default_rng(seed_of(c["name"], "variables"))
    variables = [keras.Variable(rng.uniform(-1.0, 1.0, size=shape).astype(np.float32), name=name)
                 for name, shape in shapes]
    initial = [tensor_json(v.numpy(), name) for v, (name, _) in zip(variables, shapes)]

    grng = np.random.default_rng(seed_of(c["name"], "gradients"))
    gradients, after, rates = [], [], []
    for _ in range(STEPS):
        grads = [grng.uniform(-1.0, 1.0, size=shape).astype(np.float32) for _, shape in shapes]
        rates.append(float(np.float32(opt.learning_rate)))
        opt.apply_gradients(zip([keras.ops.convert_to_tensor(g) for g in grads], variables))
        gradients.append([tensor_json(g, name) for g, (name, _) in zip(grads, shapes)])
        after.append([tensor_json(v.numpy(), name) for v, (name, _) in zip(variables, shapes)])
    # opt.iterations counts applied steps under gradient accumulation; _iterations counts calls.
    assert int(opt._iterations.numpy()) == STEPS
    extra = {}
    if c["exclude"]:
        extra["exclude_from_weight_decay"] = c["exclude"]
    if c["config"].get("use_ema"):
        opt.finalize_variable_values(variables)
        extra["finalized"] = [tensor_json(v.numpy(), name) for v, (name, _) in zip(variables, shapes)]
    return {
        **extra,
        "optimizer": {"class_name": c["class_name"], "config": c["config"]},
        "keras_config": {"class_name": c["class_name"], "config": opt.get_config()},
        "keras_version": keras.__version__,
        "variables": initial,
        "gradients": gradients,
        "after": after,
        "learning_rates": [float(f32_str(r)) for r in rates],
    }


def make_fit_case(c):
    keras.utils.clear_session()
    kwargs = dict(c["config"])
    if isinstance(kwargs.get("learning_rate"), dict):
        kwargs["learning_rate"] = build_schedule(kwargs["learning_rate"])
    opt = getattr(keras.optimizers, c["class_name"])(**kwargs)
    if c["exclude"]:
        opt.exclude_from_weight_decay(var_names=c["exclude"])
    rng = np.random.default_rng(seed_of(c["name"], "fit"))
    x = rng.uniform(-1.0, 1.0, size=(16, 4)).astype(np.float32)
    y = rng.uniform(-1.0, 1.0, size=(16, 3)).astype(np.float32)
    kernel = rng.uniform(-0.5, 0.5, size=(4, 3)).astype(np.float32)
    bias = rng.uniform(-0.5, 0.5, size=(3,)).astype(np.float32)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3)])
    model.layers[0].set_weights([kernel, bias])
    model.compile(optimizer=opt, loss="mse")
    history = model.fit(x, y, batch_size=4, epochs=3, shuffle=False, verbose=0)
    k, b = model.layers[0].get_weights()
    return {
        "optimizer": {"class_name": c["class_name"], "config": c["config"]},
        "exclude_from_weight_decay": c["exclude"] or [],
        "x": tensor_json(x, "x"),
        "y": tensor_json(y, "y"),
        "kernel": tensor_json(kernel, "kernel"),
        "bias": tensor_json(bias, "bias"),
        "loss": [float(v) for v in history.history["loss"]],
        "after": [tensor_json(k, "kernel"), tensor_json(b, "bias")],
    }


def make_schedules():
    out = []
    for name, spec, steps in SCHEDULE_CASES:
        s = build_schedule(spec)
        steps = sorted(set(steps))
        values = [float(f32_str(np.asarray(s(step)))) for step in steps]
        out.append({"name": name, "schedule": spec, "steps": steps, "values": values})
    return out


def to_plain(v):
    # Keras configs hold numpy scalars in places; JSON wants Python numbers.
    if isinstance(v, dict):
        return {k: to_plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [to_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def dump(doc):
    # One entry per line; "data" lists were pre-rendered as strings to control float formatting.
    def render(v, indent):
        pad = "  " * indent
        if isinstance(v, dict):
            items = []
            for k, x in v.items():
                if k == "data":
                    items.append(f'{pad}  "data": {x}')
                else:
                    items.append(f"{pad}  {json.dumps(k)}: {render(x, indent + 1).lstrip()}")
            return pad + "{\n" + ",\n".join(items) + "\n" + pad + "}"
        if isinstance(v, list) and v and isinstance(v[0], (dict, list)):
            return pad + "[\n" + ",\n".join(render(x, indent + 1) for x in v) + "\n" + pad + "]"
        return pad + json.dumps(v)

    return render(to_plain(doc), 0) + "\n"


def write(name, doc):
    text = dump(doc)
    json.loads(text)  # must be valid JSON
    os.makedirs(os.path.dirname(os.path.join(OUT_DIR, name + ".json")), exist_ok=True)
    with open(os.path.join(OUT_DIR, name + ".json"), "w") as f:
        f.write(text)
    print(f"{name}: {len(text)} bytes")


def main():
    os.makedirs(OUT_DIR, exist_ok=True)
    only = set(sys.argv[1:])
    names = [c["name"] for c in OPTIMIZER_CASES] + ["schedules"]
    assert len(names) == len(set(names)), "duplicate case names"
    if not only:
        for f in os.listdir(OUT_DIR):
            if f.endswith(".json") and f[:-5] not in names:
                os.remove(os.path.join(OUT_DIR, f))
    for c in OPTIMIZER_CASES:
        if not only or c["name"] in only:
            write(c["name"], make_optimizer_case(c))
    if not only or "schedules" in only:
        write("schedules", make_schedules())
    for c in FIT_CASES:
        if not only or "fit/" + c["name"] in only:
            write("fit/" + c["name"], make_fit_case(c))


if __name__ == "__main__":
    main()

// A GAN on Fashion-MNIST that overrides train_step, as Keras' example "DCGAN: overriding Model.train_step"
// does: a model of two models, each step training the discriminator on generated and real images, then the
// generator through the discriminator, with two optimizers and two GradientTapes. fit() keeps its progress bar,
// callbacks and History around the custom step, which logs d_loss and g_loss.
//   gan [epochs=5] [batch_size=64] [steps_per_epoch=all] [samples.pgm]
// Writes 16 generated images as one PGM file at the end (default gan_samples.pgm).
#include <tower/tower.h>

#include <cstdio>
#include <cstdlib>
#include <algorithm>
#include <fstream>

using namespace tower;

constexpr Index kLatent = 64;

// Images in [0, 1] from latent vectors: upsampling and convolutions (28x28x1).
Model make_generator() {
  auto z = Input({kLatent});
  auto x = layers::Dense({.units = 7 * 7 * 64, .activation = "leaky_relu"})(z);
  x = layers::Reshape({.target_shape = {7, 7, 64}})(x);
  x = layers::UpSampling2D({.size = 2})(x);
  x = layers::Conv2D({.filters = 64, .kernel_size = 3, .padding = "same", .activation = "leaky_relu"})(x);
  x = layers::UpSampling2D({.size = 2})(x);
  x = layers::Conv2D({.filters = 32, .kernel_size = 3, .padding = "same", .activation = "leaky_relu"})(x);
  return Model(z, layers::Conv2D({.filters = 1, .kernel_size = 5, .padding = "same", .activation = "sigmoid"})(x),
               "generator");
}

// One logit per image: fake (1) or real (0).
Model make_discriminator() {
  auto image = Input({28, 28, 1});
  auto x = layers::Conv2D({.filters = 32, .kernel_size = 3, .strides = 2, .padding = "same",
                           .activation = "leaky_relu"})(image);
  x = layers::Conv2D({.filters = 64, .kernel_size = 3, .strides = 2, .padding = "same",
                      .activation = "leaky_relu"})(x);
  x = layers::GlobalMaxPooling2D()(x);
  return Model(image, layers::Dense({.units = 1})(x), "discriminator");
}

class GAN final : public ModelImpl {
 public:
  GAN(Model discriminator, Model generator)
      : ModelImpl("GAN", "gan"), discriminator_(std::move(discriminator)), generator_(std::move(generator)) {}

  // Keras' GAN.compile(d_optimizer, g_optimizer, loss_fn): the discriminator's optimizer is the model's own.
  void compile(optimizers::OptimizerPtr d_optimizer, optimizers::OptimizerPtr g_optimizer, losses::LossPtr loss) {
    g_optimizer_ = std::move(g_optimizer);
    loss_ = std::move(loss);
    ModelImpl::compile(std::move(d_optimizer), {}, {}, {});
  }

  // The two models' weights are this model's (save_weights, get_weights).
  std::vector<VariablePtr> weights() const override {
    std::vector<VariablePtr> all = discriminator_.weights();
    for (const VariablePtr& v : generator_.weights()) all.push_back(v);
    return all;
  }

  void train_step(const data::Element& batch) override {
    const Tensor& real = batch[0];  // the labels, batch[1], are not used
    const Index n = real.dim(0);

    // The discriminator, on generated images (labelled 1) and real ones (0), labels with a little noise.
    {
      GradientTape tape;
      const Tensor fake = ops::stop_gradient(tape.call(generator_, latent(n)));
      const Tensor images = ops::concatenate({fake, real.to(fake.device())}, 0);
      const Tensor logits = tape.call(discriminator_, images);
      const Tensor d_loss = tape.loss(loss_, labels(n), logits);
      const std::vector<VariablePtr> vars = discriminator_.trainable_weights();
      optimizer()->apply_gradients(optimizers::zip(tape.gradient(d_loss, vars), vars));
      training_loop().track_metric("d_loss", d_loss);
    }
    // The generator, through the discriminator, towards images it calls real (0).
    {
      GradientTape tape;
      const Tensor logits = tape.call(discriminator_, tape.call(generator_, latent(n)));
      const Tensor g_loss = tape.loss(loss_, Tensor::zeros({n, 1}), logits);
      const std::vector<VariablePtr> vars = generator_.trainable_weights();
      g_optimizer_->apply_gradients(optimizers::zip(tape.gradient(g_loss, vars), vars));
      training_loop().track_metric("g_loss", g_loss);
    }
  }

  // `count` generated images, [count, 28, 28, 1] on the CPU.
  Tensor generate(Index count) {
    GradientTape tape;
    return tape.call(generator_, latent(count)).to(Device::cpu());
  }

 private:
  Tensor latent(Index n) {
    std::vector<float> z(static_cast<std::size_t>(n * kLatent));
    for (float& v : z) v = random_.normal();
    return Tensor::from_vector(z, {n, kLatent});
  }

  // n ones (generated) then n zeros (real), each plus 0.05 * uniform noise.
  Tensor labels(Index n) {
    std::vector<float> y(static_cast<std::size_t>(2 * n));
    for (std::size_t i = 0; i < y.size(); ++i)
      y[i] = (i < static_cast<std::size_t>(n) ? 1.f : 0.f) + 0.05f * random_.uniform();
    return Tensor::from_vector(y, {2 * n, 1});
  }

  Model discriminator_, generator_;
  optimizers::OptimizerPtr g_optimizer_;
  losses::LossPtr loss_;
  Generator random_{1337};
};

// A 4x4 grid of 28x28 images (values in [0, 1]) as an 8-bit PGM.
void write_grid(const Tensor& images, const std::string& path) {
  const std::vector<float> v = images.to_vector();
  std::ofstream out(path, std::ios::binary);
  out << "P5\n112 112\n255\n";
  for (int row = 0; row < 112; ++row)
    for (int col = 0; col < 112; ++col) {
      const int k = (row / 28) * 4 + col / 28;
      const float p = v[static_cast<std::size_t>(k * 784 + (row % 28) * 28 + col % 28)];
      out.put(static_cast<char>(static_cast<unsigned char>(std::min(std::max(p, 0.f), 1.f) * 255.f + 0.5f)));
    }
}

int main(int argc, char** argv) {
  const int epochs = argc > 1 ? std::atoi(argv[1]) : 5;
  const int batch_size = argc > 2 ? std::atoi(argv[2]) : 64;
  const std::string samples = argc > 4 ? argv[4] : "gan_samples.pgm";
  set_random_seed(42);

  auto train = data::fashion_mnist::load("train").shuffle(60000).batch(batch_size, /*drop_remainder=*/true).prefetch(2);
  auto gan = std::make_shared<GAN>(make_discriminator(), make_generator());
  gan->compile(optimizers::Adam({.learning_rate = 3e-4, .beta_1 = 0.5}),
               optimizers::Adam({.learning_rate = 3e-4, .beta_1 = 0.5}),
               losses::BinaryCrossentropy({.from_logits = true}));
  Model model(gan);

  FitOptions fit{.epochs = epochs, .verbose = 2};
  if (argc > 3) fit.steps_per_epoch = std::atoll(argv[3]);
  const callbacks::History history = model.fit(train, fit);
  const std::vector<double>& d = history["d_loss"];
  const std::vector<double>& g = history["g_loss"];
  std::printf("Final d_loss: %.4f  g_loss: %.4f\n", d.back(), g.back());
  write_grid(gan->generate(16), samples);
  std::printf("Wrote 16 generated images to %s\n", samples.c_str());
  return 0;
}

// Real-world C++ shapes: virtual calls, RAII destructors, exceptions
// thrown and caught, templates, lambdas, range-for, std containers.
#include <cstdio>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
};

struct Rect : Shape {
  Rect(double w, double h) : w_(w), h_(h) {}
  double area() const override { return w_ * h_; }
  double w_, h_;
};

struct Square : Rect {
  explicit Square(double s) : Rect(s, s) {}
};

class Guard {
public:
  explicit Guard(int &n) : n_(n) { ++n_; }
  ~Guard() { --n_; }
private:
  int &n_;
};

static int depth = 0;

// A global with a constructor: the unit gets an initializer function,
// which GCC places on the file's last line.
static std::map<int, std::string> names = { { 1, "one" }, { 2, "two" } };

static int parse(const std::string &s)
{
  Guard g(depth);
  if (s.empty())
    throw std::invalid_argument("empty");
  int v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      throw std::invalid_argument("digit");
    v = v * 10 + (c - '0');
  }
  return v;
}

template <typename T>
T clamp(T v, T lo, T hi)
{
  return v < lo ? lo
       : v > hi ? hi
       : v;
}

static int try_parse(const std::string &s)
{
  try {
    return parse(s);
  } catch (const std::invalid_argument &e) {
    return -1;
  } catch (...) {
    return -2;
  }
}

int main()
{
  std::vector<std::unique_ptr<Shape>> shapes;
  for (int i = 1; i <= 4; i++) {
    if (i % 2)
      shapes.push_back(std::make_unique<Rect>(i, i + 1));
    else
      shapes.push_back(std::make_unique<Square>(i));
  }
  double total = 0;
  for (const auto &s : shapes)
    total += s->area();
  std::map<std::string, int> m;
  const char *inputs[] = { "12", "", "x1", "345" };
  for (const char *in : inputs)
    m[in] = try_parse(in);
  int acc = 0;
  auto add = [&acc](int v) {
    if (v > 0)
      acc += v;
    else
      acc -= 1;
  };
  for (const auto &kv : m)
    add(kv.second);
  acc += clamp(acc, 0, 100) + clamp(2.5, 0.0, 1.0) > 0;
  std::printf("%g %d %d %zu\n", total, acc, depth, names.size());
  return depth;
}

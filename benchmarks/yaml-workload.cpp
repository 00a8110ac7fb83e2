// yaml-workload.cpp - a C++ workload for benchmarks/frames.py: yaml-cpp
// (Debian's source package, built with the program) parsing, walking and
// emitting a generated document, and converting its scalars, some of which
// fail with exceptions (YAML::BadConversion, YAML::ParserException) that
// unwind through the parser's frames: the kind of C++ performance engineers
// measure, virtual calls, std::string and small allocations included.
//
// Usage: yaml-workload [SCALE]     (SCALE defaults to 10)
//
// The work is deterministic and the program prints one checksum line,
// identical for every build, so the benchmark can check that an
// instrumented build still computes the same thing.
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>

#include "yaml-cpp/yaml.h"

static unsigned long seed = 12345;
static unsigned
rnd (unsigned m)
{
  seed = (seed * 1103515245 + 12345) % 2147483648ul;
  return (unsigned) (seed % m);
}

// A document of SIZE records: maps of scalars, lists and nested maps, a
// few values that are not numbers.
static std::string
document (int size)
{
  std::ostringstream o;
  o << "records:\n";
  for (int i = 0; i < size; i++)
    {
      o << "  - id: " << i << "\n"
        << "    name: item" << rnd (100000) << "\n"
        << "    price: " << rnd (1000) << "." << rnd (100) << "\n"
        << "    count: " << (rnd (10) == 0 ? std::string ("many")
                                           : std::to_string (rnd (500)))
        << "\n"
        << "    tags: [a" << rnd (9) << ", b" << rnd (9) << ", c" << rnd (9)
        << "]\n"
        << "    where: {x: " << rnd (100) << ", y: " << rnd (100) << "}\n";
    }
  return o.str ();
}

static long
walk (const YAML::Node &doc)
{
  long sum = 0;
  for (const YAML::Node &r : doc["records"])
    {
      sum += r["id"].as<int> ();
      sum += (long) (r["price"].as<double> () * 100);
      try
        {
          sum += r["count"].as<int> ();
        }
      catch (const YAML::BadConversion &)
        {
          sum += 7; // "many"
        }
      for (const YAML::Node &t : r["tags"])
        sum += (long) t.as<std::string> ().size ();
      sum += r["where"]["x"].as<int> () * r["where"]["y"].as<int> ();
      sum += (long) r["name"].Scalar ().size ();
    }
  return sum;
}

static long
emit (const YAML::Node &doc)
{
  YAML::Emitter out;
  out << doc;
  return (long) out.size ();
}

// Malformed input: the parser throws from deep inside.
static long
broken (int i)
{
  try
    {
      YAML::Load ("a: [1, 2\nb: {c: " + std::to_string (i));
    }
  catch (const YAML::ParserException &e)
    {
      return e.mark.line + 1;
    }
  return 0;
}

int
main (int argc, char **argv)
{
  int scale = argc > 1 ? std::atoi (argv[1]) : 10;
  std::string text = document (200);
  long sum = 0;
  for (int round = 0; round < scale; round++)
    {
      YAML::Node doc = YAML::Load (text);
      sum += walk (doc);
      sum += emit (doc);
      for (int i = 0; i < 20; i++)
        sum += broken (i);
    }
  std::printf ("checksum %ld\n", sum);
  return 0;
}

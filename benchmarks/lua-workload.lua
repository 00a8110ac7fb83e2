-- lua-workload.lua - a call- and table-heavy Lua program for the user-hooks
-- benchmark (benchmarks/user-hooks.sh).
--
-- Usage: lua lua-workload.lua [SCALE]     (SCALE defaults to 10)
--
-- Every part stresses the interpreter's C functions that run once per Lua
-- operation: luaD_precall/luaD_poscall on each Lua call, luaH_get* and
-- luaH_newkey/luaH_resize on table reads and growth, luaV_finishget on
-- metatable lookups, lua_call from C into Lua (table.sort comparators,
-- string.gsub callbacks), luaS_newlstr for new strings and the collector.
-- The work is deterministic (no clock, no random seed from the system) and
-- the program prints one checksum line, identical for every build of the
-- interpreter, so the benchmark can check that an instrumented build still
-- computes the same thing.

local scale = tonumber(arg and arg[1]) or 10

-- 1. Recursive calls: one luaD_precall/luaD_poscall pair per call.
local function fib(n)
  if n < 2 then return n end
  return fib(n - 1) + fib(n - 2)
end

-- 2. Objects with methods through __index (metatable lookups).
local Vec = {}
Vec.__index = Vec
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
function Vec:add(o) return Vec.new(self.x + o.x, self.y + o.y) end
function Vec:dot(o) return self.x * o.x + self.y * o.y end
function Vec:scale(k) return Vec.new(self.x * k, self.y * k) end

-- A small deterministic generator (LCG), so the data never depends on the
-- interpreter's own random number generator.
local seed = 12345
local function rnd(m)
  seed = (seed * 1103515245 + 12345) % 2147483648
  return seed % m
end

local checksum = 0
local function mix(v)
  checksum = (checksum * 31 + math.floor(v)) % 1000000007
end

for round = 1, scale do
  -- 1
  mix(fib(20))

  -- 2: build vectors, combine them through method calls
  local vs = {}
  for i = 1, 2000 do vs[i] = Vec.new(rnd(100), rnd(100)) end
  local acc = Vec.new(0, 0)
  for i = 1, #vs - 1 do
    acc = acc:add(vs[i]:scale(2))
    mix(vs[i]:dot(vs[i + 1]) % 1000)
  end
  mix(acc.x + acc.y)

  -- 3: sort records with a Lua comparator (C calls back into Lua)
  local recs = {}
  for i = 1, 3000 do
    recs[i] = {key = rnd(100000), name = "r" .. rnd(1000)}
  end
  table.sort(recs, function(a, b)
    if a.key ~= b.key then return a.key < b.key end
    return a.name < b.name
  end)
  mix(recs[1].key + recs[#recs].key)

  -- 4: a dictionary keyed by new strings; growth rehashes the table
  local dict = {}
  for i = 1, 4000 do
    local k = "k" .. (rnd(2000)) .. "_" .. (i % 7)
    dict[k] = (dict[k] or 0) + i
  end
  local n, s = 0, 0
  for k, v in pairs(dict) do n = n + 1; s = s + v + #k end
  mix(n + s)

  -- 5: closures and callbacks from string.gsub, table.concat
  local parts = {}
  for i = 1, 500 do parts[#parts + 1] = tostring(rnd(1000)) end
  local text = table.concat(parts, " ")
  local total = 0
  text:gsub("%d+", function(d) total = total + tonumber(d) end)
  mix(total)

  -- 6: a binary tree of small tables (allocation and collection)
  local function make(d)
    if d == 0 then return {v = rnd(10)} end
    return {l = make(d - 1), r = make(d - 1)}
  end
  local function sum(t)
    if t.v then return t.v end
    return sum(t.l) + sum(t.r)
  end
  mix(sum(make(12)))
end

print(string.format("lua-workload scale=%d checksum=%d", scale, checksum))

-- lua-train.lua - the "other input" of benchmarks/run's lua workload: the
-- run the tally-blocks-*-prof-other modes take their profile= from.
--
-- Usage: lua lua-train.lua [SCALE]     (SCALE defaults to 1)
--
-- Unlike lua-workload.lua (recursion, method calls through __index, sorting
-- with a Lua comparator, string-keyed tables, gsub callbacks, tree
-- allocation), this program spends its time on numeric for-loops over
-- arrays, integer and bitwise arithmetic, string formatting, searching and
-- building (string.format, find/match, rep, byte/char, upper), coroutines,
-- varargs, pcall/error, inheritance two metatables deep and
-- table.insert/remove: the interpreter's other opcodes and library
-- functions, so that a profile taken from it does not simply predict the
-- measured run.  Deterministic; prints one checksum line.

local scale = tonumber(arg and arg[1]) or 1

local checksum = 0
local function mix(v)
  checksum = (checksum * 131 + (math.floor(v) % 1000003)) % 2147483647
end

-- 1. Numeric loops over arrays: a sieve and a prefix sum, integer and
-- bitwise operators.
local function sieve(n)
  local composite, count = {}, 0
  for i = 2, n do
    if not composite[i] then
      count = count + 1
      for j = i * i, n, i do composite[j] = true end
    end
  end
  return count
end

local function bits(n)
  local x, acc = 0x9e3779b9, 0
  for i = 1, n do
    x = (x ~ (x << 13)) & 0xffffffff
    x = x ~ (x >> 17)
    x = (x ~ (x << 5)) & 0xffffffff
    acc = (acc + (x & 0xff) * (i // 3)) % 1000000007
  end
  return acc
end

-- 2. Strings: formatting, searching and building.
local function strings(n)
  local parts = {}
  for i = 1, n do
    parts[#parts + 1] = string.format("%05d:%s;", i * 7 % 99991, string.rep("ab", i % 5))
  end
  local text = table.concat(parts)
  local found, pos = 0, 1
  while true do
    local s, e, num = text:find("(%d+):abab", pos)
    if not s then break end
    found = found + tonumber(num) % 97
    pos = e + 1
  end
  local up = text:sub(1, 200):upper()
  local sum = 0
  for i = 1, #up do sum = sum + up:byte(i) end
  return found + sum + #string.char(65, 66, 67)
end

-- 3. Coroutines: a generator pipeline.
local function gen(n)
  return coroutine.wrap(function()
    for i = 1, n do coroutine.yield(i * i % 1009) end
  end)
end

local function pipeline(n)
  local total = 0
  for v in gen(n) do
    if v % 2 == 0 then total = total + v else total = total - 1 end
  end
  return total
end

-- 4. Varargs, pcall and error.
local function sumall(...)
  local s = 0
  for i = 1, select("#", ...) do s = s + select(i, ...) end
  return s
end

local function risky(i)
  if i % 11 == 0 then error("eleven") end
  return sumall(i, i + 1, i + 2, i + 3)
end

local function errors(n)
  local ok, bad = 0, 0
  for i = 1, n do
    local good, v = pcall(risky, i)
    if good then ok = ok + v else bad = bad + 1 end
  end
  return ok + bad
end

-- 5. Inheritance two levels deep, and a queue with insert/remove.
local Base = {}
Base.__index = Base
function Base.new(v) return setmetatable({v = v}, Base) end
function Base:get() return self.v end
local Mid = setmetatable({}, {__index = Base})
Mid.__index = Mid
function Mid.new(v) local o = Base.new(v); return setmetatable(o, Mid) end
function Mid:twice() return self:get() * 2 end
local Leaf = setmetatable({}, {__index = Mid})
Leaf.__index = Leaf
function Leaf.new(v) local o = Mid.new(v); return setmetatable(o, Leaf) end

local function objects(n)
  local q, s = {}, 0
  for i = 1, n do
    table.insert(q, Leaf.new(i))
    if #q > 50 then s = s + table.remove(q, 1):twice() end
  end
  return s
end

for round = 1, scale do
  mix(sieve(60000))
  mix(bits(150000))
  mix(strings(3000))
  mix(pipeline(30000))
  mix(errors(20000))
  mix(objects(30000))
end

print(string.format("lua-train scale=%d checksum=%d", scale, checksum))

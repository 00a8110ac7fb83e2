-- tests.lua - a deterministic workload for the real-projects tier
-- (testsuite/realworld/run): recursion, tables, strings, closures,
-- metatables, coroutines, pcall/error.  Prints only values that do not
-- depend on addresses or time, so every build must print the same.
-- Usage: lua tests.lua [SCALE]   (SCALE defaults to 1; --quick uses 1, full 3)
local scale = tonumber(arg and arg[1]) or 1
local function check(name, got, want)
  if got ~= want then error(string.format("%s: got %s, want %s", name, tostring(got), tostring(want))) end
  print(string.format("%-24s %s", name, tostring(got)))
end

-- recursion
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
check("fib(22)", fib(22), 17711)
local function ack(m, n)
  if m == 0 then return n + 1 elseif n == 0 then return ack(m - 1, 1) end
  return ack(m - 1, ack(m, n - 1))
end
check("ack(2,300)", ack(2, 300), 603)
local function hanoi(n, a, b, c) if n == 0 then return 0 end return hanoi(n - 1, a, c, b) + 1 + hanoi(n - 1, c, b, a) end
check("hanoi(16)", hanoi(16), 65535)

-- tables: arrays, hashes, sort, removal, length
for round = 1, scale do
  local t, seed = {}, 42
  for i = 1, 20000 do seed = (seed * 1103515245 + 12345) % 2147483648; t[i] = seed % 100000 end
  table.sort(t)
  local ok = true
  for i = 2, #t do if t[i - 1] > t[i] then ok = false end end
  check("sort sorted " .. round, ok, true)
  local h, n = {}, 0
  for i = 1, #t do local k = "k" .. t[i]; if not h[k] then h[k] = i; n = n + 1 end end
  local m = 0
  for _ in pairs(h) do m = m + 1 end
  check("distinct keys " .. round, m, n)
  for i = #t, 1, -2 do table.remove(t, i) end
  check("after remove " .. round, #t, 10000)
  check("concat " .. round, #table.concat({1, 2, 3, "x", 4.5}, ","), 11)
end

-- strings: format, gsub, find, patterns, rep, byte/char
local s = string.rep("abc", 1000)
check("gsub count", select(2, s:gsub("b", "B")), 1000)
check("find", s:find("cab", 1, true), 3)
check("match", ("key=value; other=2"):match("(%w+)=(%w+)"), "key")
local words = 0
for w in ("the quick brown fox jumps over the lazy dog"):gmatch("%a+") do words = words + 1 end
check("gmatch words", words, 9)
check("format", string.format("%5.2f|%-4d|%x|%q", 3.14159, 7, 255, "a\nb"), ' 3.14|7   |ff|"a\\\nb"')
local bytes = {}
for i = 1, 26 do bytes[i] = string.char(96 + i) end
check("char/byte", table.concat(bytes):byte(26), 122)
check("upper/reverse", ("hello"):upper():reverse(), "OLLEH")
local parts = {}
local digits = 0
for i = 1, 5000 * scale do parts[#parts + 1] = tostring(i); digits = digits + math.floor(math.log(i, 10) + 1e-9) + 1 end
check("big concat len", #table.concat(parts), digits)

-- closures and metatables
local function counter() local c = 0; return function() c = c + 1; return c end end
local c1 = counter(); for _ = 1, 999 do c1() end
check("closure", c1(), 1000)
local Vec = {}
Vec.__index = Vec
Vec.__add = function(a, b) return setmetatable({x = a.x + b.x, y = a.y + b.y}, Vec) end
Vec.__eq = function(a, b) return a.x == b.x and a.y == b.y end
Vec.__tostring = function(v) return "(" .. v.x .. "," .. v.y .. ")" end
function Vec.new(x, y) return setmetatable({x = x, y = y}, Vec) end
local acc = Vec.new(0, 0)
for i = 1, 1000 do acc = acc + Vec.new(i, -i) end
check("metatable add", tostring(acc), "(500500,-500500)")
check("metatable eq", acc == Vec.new(500500, -500500), true)

-- coroutines: generators and ping-pong
local function gen(n) return coroutine.wrap(function() for i = 1, n do coroutine.yield(i * i) end end) end
local sum = 0
for v in gen(1000) do sum = sum + v end
check("coroutine sum", sum, 333833500)
local co = coroutine.create(function(a) local b = coroutine.yield(a + 1); local c = coroutine.yield(b * 2); return c - 1 end)
local _, r1 = coroutine.resume(co, 1); local _, r2 = coroutine.resume(co, 10); local _, r3 = coroutine.resume(co, 100)
check("coroutine ping-pong", r1 + r2 + r3, 2 + 20 + 99)
check("coroutine dead", coroutine.status(co), "dead")

-- pcall / error / error objects / xpcall
local okc, msg = pcall(function() error("boom", 0) end)
check("pcall error", tostring(okc) .. ":" .. msg, "false:boom")
local okt, obj = pcall(function() error({code = 42}) end)
check("error object", obj.code, 42)
local depth = 0
local function deep(n) if n == 0 then error("bottom", 0) end depth = depth + 1; return deep(n - 1) + 1 end
check("deep pcall", select(2, pcall(deep, 150)), "bottom")
check("xpcall handler", select(2, xpcall(function() return nil + 1 end, function(m) return "handled" end)), "handled")
local caught = 0
for i = 1, 2000 * scale do if not pcall(function() if i % 3 == 0 then error("x") end end) then caught = caught + 1 end end
check("many pcalls", caught, math.floor(2000 * scale / 3))

-- integer/float arithmetic and utf8
check("integer div", 7 // 2 + 7 % 3 + (2 ^ 10 | 0), 3 + 1 + 1024)
check("utf8 len", utf8.len("héllo wörld"), 11)
print("all lua tests passed")

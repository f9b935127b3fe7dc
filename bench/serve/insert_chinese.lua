-- wrk: POST /v1/documents, check-and-insert of about 1 KB of Chinese text each (340 characters
-- drawn from 400 common ones, so that nearly every document is new), ids unique per connection.
local chars = {}
local common = "的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动同工也能下过子说产种面而方后多定行学法所民得经十三之进着等部度家电力里如水化高自二理起小物现实加量都两体制机当使点从业本去把性好应开它合还因由其些然前外天政四日那社义事平形相全表间样与关各重新线内数正心反你明看原又么利比或但质气第向道命此变条只没结解问意建月公无系军很情者最立代想已通并提直题党程展五果料象员革位入常文总次品式活设及管特件长求老头基资边流路级少图山统接知较将组见计别她手角期根论运农指几九区强放决西被干做必战先回则任取据处队南给色光门即保治北造百规热领七海口东导器压志世金增争济阶油思术极交受联什认六共权收证改清己美再采转更单风切打白教速花带安场身车例真务具万每目至达走积示议声报斗完类八离华名确才科张信马节话米整空元况今集温传土许步群广石记需段研界拉林律叫且究观越织装影算低持音众书布复容儿须际商非验连断深难近矿千周委素技备半办青省列习响约支般史感劳便团往酸历市克何除消构府称太准精值号率族维划选标写存候毛亲快效斯院查江型眼王按格养易置派层片始却专状育厂京识适属圆包火住调满县局照参红细引听该铁价严"
-- Every character is 3 bytes of UTF-8 (wrk's Lua 5.1 has no utf8 library).
for i = 1, #common, 3 do chars[#chars + 1] = common:sub(i, i + 2) end
local counter = 0
local thread_id = 0
setup = function(thread)
  thread:set("thread_id", thread_id)
  thread_id = thread_id + 1
end
init = function(args)
  -- Ids differ from run to run (a store keeps the documents of earlier runs).
  math.randomseed(os.time() * 1000 + thread_id)
  counter = math.random(1e9)
end
request = function()
  counter = counter + 1
  local text = {}
  for i = 1, 340 do text[i] = chars[math.random(#chars)] end
  local body = '{"id":"w' .. thread_id .. '-' .. counter .. '-' .. math.random(1e9) ..
               '","text":"' .. table.concat(text) .. '"}'
  return wrk.format("POST", "/v1/documents", {["Content-Type"] = "application/json"}, body)
end

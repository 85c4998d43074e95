/**
 * What a Chat Completions upstream must receive for the weather tool round trip (the question, the model's
 * `get_weather` call, the tool's answer), whichever inbound format the client spoke.
 */
export const CHAT_UPSTREAM_WEATHER_ROUND_TRIP = {
  model: 'llama-3.3-70b-versatile',
  messages: [
    { role: 'user', content: 'Weather in Tokyo?' },
    { role: 'assistant', tool_calls: [{ id: 'call_9', type: 'function', function: { name: 'get_weather', arguments: '{"location":"Tokyo","unit":"celsius"}' } }] },
    { role: 'tool', tool_call_id: 'call_9', content: '{"temperature":24,"condition":"sunny"}' },
  ],
  tools: [{ type: 'function', function: { name: 'get_weather' } }],
}

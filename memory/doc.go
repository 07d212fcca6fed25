// Package memory is Weft's chat memory: conversations kept in a [Store]
// (in-process, SQL or Redis) and windows over them that decide what a model
// call sees.
//
// For LangChain4j users: [Chats] is a ChatMemoryProvider, [MessageWindow]
// and [TokenWindow] are MessageWindowChatMemory and TokenWindowChatMemory
// for every ID, [PerID] is a window chosen per ID (dynamicMaxMessages), a
// [Chat] is one ChatMemory and a [Store] a ChatMemoryStore.
package memory

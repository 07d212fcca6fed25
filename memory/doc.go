// Package memory is Weft's chat memory: conversations kept in a [Store]
// (in-process, SQL or Redis) and windows over them that decide what a model
// call sees.
//
// What slides out of a window need not be lost: a chat with a [Summarizer]
// ([WithSummary]) folds it, after the turn and in the background, into the
// conversation's running [Summary], which the next turns send after their
// system prompt. Long-term memory across conversations, facts about an end
// user, is package memory/facts; docs/memory.md tells both.
//
// For LangChain4j users: [Chats] is a ChatMemoryProvider, [MessageWindow]
// and [TokenWindow] are MessageWindowChatMemory and TokenWindowChatMemory
// for every ID, [PerID] is a window chosen per ID (dynamicMaxMessages), a
// [Chat] is one ChatMemory and a [Store] a ChatMemoryStore.
package memory

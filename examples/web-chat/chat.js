// The web chat example: the client library in a page (bundled by serve.mjs). Sign in with the texted
// code, accept invitations, open a room, read and send. The session, the inbox position and unsent
// messages are kept in IndexedDB, so a reload continues where the page was.
import { createChatClient, indexedDbStore, ok } from '@chat-platform/client';

const params = new URLSearchParams(location.search);
const baseUrl = params.get('api') ?? location.origin;
const $ = (id) => document.getElementById(id);
const show = (id, visible) => $(id).classList.toggle('hidden', !visible);

const chat = await createChatClient({ baseUrl, socketUrl: params.get('hub') ?? baseUrl, store: indexedDbStore('web-chat'), device: { name: navigator.userAgent.slice(0, 60), platform: 'WEB' } });
// For the browser test and for poking at it from the console.
window.chat = chat;
window.stateHistory = [chat.state];

let openRoomId = null;
const shown = new Set();

function renderState(state) {
  $('state').textContent = state;
  show('sign-in-form', state === 'signed-out');
  show('chat', state !== 'signed-out');
}

function addMessage(message) {
  if (message.roomId !== openRoomId || shown.has(message.id)) return;
  shown.add(message.id);
  const item = document.createElement('li');
  item.dataset.id = message.id;
  item.textContent = `${message.userId === chat.userId ? 'me' : message.userId.slice(0, 6)}: ${message.message}`;
  $('messages').append(item);
}

async function openRoom(roomId, name) {
  openRoomId = roomId;
  shown.clear();
  $('messages').replaceChildren();
  $('room-name').textContent = name;
  for (const message of await chat.openRoom(roomId)) addMessage(message);
}

function renderRooms(rooms) {
  $('rooms').replaceChildren(
    ...rooms.map(({ room, unreadCount }) => {
      const button = document.createElement('button');
      button.dataset.room = room.id;
      button.textContent = `${room.name ?? 'Direct chat'}${unreadCount ? ` (${unreadCount})` : ''}`;
      button.onclick = () => void openRoom(room.id, room.name ?? 'Direct chat');
      return button;
    }),
  );
}

chat.on('state', (state) => {
  window.stateHistory.push(state);
  renderState(state);
});
chat.on('chats', renderRooms);
// Something may have been missed: the library refetched the open room and the chat list; say what else to refetch.
chat.on('resync', ({ scope, reason, refetch }) => {
  $('notice').textContent = `resynced (${scope}, ${reason})${refetch.length ? `: refetch ${refetch.join(', ')}` : ''}`;
});
chat.on('message.new', (message) => addMessage(message));
chat.on('room.invitation', ({ data }) => {
  const button = document.createElement('button');
  button.dataset.invitation = data.roomId;
  button.textContent = `Join ${data.roomName ?? 'a chat'}`;
  button.onclick = async () => {
    await chat.api.POST('/api/rooms/{roomId}/invitation', { params: { path: { roomId: data.roomId }, query: { accept: true } } });
    button.remove();
    renderRooms(await chat.chats());
  };
  $('invitations').append(button);
});
chat.on('sent', ({ clientMessageId, messageId }) => {
  // The pending line becomes the message, unless its broadcast came first and is shown already.
  const item = document.querySelector(`[data-client-id="${CSS.escape(clientMessageId)}"]`);
  if (!item) return;
  if (shown.has(messageId)) return void item.remove();
  shown.add(messageId);
  item.dataset.id = messageId;
  item.className = '';
});

$('send-code').onclick = () => void chat.requestCode($('phone').value.trim());
$('sign-in-form').onsubmit = async (event) => {
  event.preventDefault();
  await chat.signIn($('phone').value.trim(), $('code').value.trim());
  chat.connect();
};
$('send-form').onsubmit = (event) => {
  event.preventDefault();
  const text = $('text').value;
  if (!openRoomId || !text) return;
  $('text').value = '';
  const { clientMessageId } = chat.send(openRoomId, text);
  const item = document.createElement('li');
  item.dataset.clientId = clientMessageId;
  item.className = 'pending';
  item.textContent = `me: ${text}`;
  $('messages').append(item);
};
$('sign-out').onclick = () => void chat.signOut();

renderState(chat.state);
if (chat.state !== 'signed-out') chat.connect();
// Rooms made from the console: create one to try it.
window.newRoom = async (name) => ok(chat.api.POST('/api/rooms', { body: { type: 'PRIVATE_GROUP', name } }));

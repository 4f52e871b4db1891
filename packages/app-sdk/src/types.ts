/** What the service sends to an app's webhook, and what the app may answer (the interface specification's records). */

export type Scope = 'payments' | 'conversation.ref' | 'user.name' | 'user.language' | 'user.location';

export interface InvocationBody {
  type: 'invocation';
  /** The invocation id: the same on every step of one form. */
  id: string;
  ts: number;
  app: { id: string; version: string; manifestHash: string };
  command: string | null;
  flow: string | null;
  step: string | null;
  values: Record<string, unknown> | null;
  sealed: { alg: 'x25519-hkdf-sha256-aes256gcm/v1'; value: string } | null;
  payload: Record<string, unknown> | null;
  /** A card's submit button was pressed: its id and payload, and the message (the card) it is on. */
  action: { id: string; payload: Record<string, unknown>; messageId: string } | null;
  /** A command's free text (`/weather Berlin` → "Berlin"), when its manifest declares an argument; else null. */
  text: string | null;
  /** Where to answer later, after replying `{type: 'deferred'}`: up to 5 answers within 15 minutes (`answerLater`). */
  followUp: { url: string; expiresAt: number };
  user: { id: string; name?: string | null; language?: string | null; location?: unknown };
  conversation: { roomType: string; ref?: string } | null;
}

export interface PingBody {
  type: 'ping';
  ts: number;
}

export interface PaymentEventBody {
  type: 'payment.completed' | 'payment.declined' | 'payment.expired';
  id: string;
  ts: number;
  app: { id: string };
  /** `test: true` only on a test payment (the app in test mode: no money moved); absent on live ones. */
  payment: { id: string; kind: string; status: string; amount: string; currency: string; reference: string; description: string; createdAt: number; completedAt: number | null; test?: true };
  user: { id: string };
}

/** The app was added to a room, or removed from one (a room admin did it): the room's id names it to the bot interface. */
export interface RoomEventBody {
  type: 'app.added' | 'app.removed';
  id: string;
  ts: number;
  app: { id: string };
  room: { id: string; type: string };
}

export type WebhookBody = InvocationBody | PingBody | PaymentEventBody | RoomEventBody;

export type Button = { id: string; label: string; style?: 'primary' | 'danger' | 'default'; kind: 'submit' | 'open_flow'; flow?: string; payload?: Record<string, unknown> };
export type Block =
  | { type: 'title'; text: string }
  | { type: 'text'; text: string }
  | { type: 'fields'; fields: { label: string; value: string }[] }
  | { type: 'image'; url: string; alt: string }
  | { type: 'divider' }
  | { type: 'context'; text: string }
  | { type: 'actions'; buttons: Button[] };
export interface Card {
  blocks: Block[];
}
export type ViewBlock = Block | { type: 'input'; id: string; label?: string; default?: unknown; rules?: Record<string, unknown> };

export type Reply =
  | { type: 'card'; visibility?: 'room' | 'private'; update?: boolean; card: Card }
  | { type: 'card'; visibility?: 'room' | 'private'; update?: boolean; template: string; data?: Record<string, string | number> }
  | { type: 'ack'; message: string }
  | { type: 'deferred'; message?: string }
  | { type: 'error'; userMessage: string; code?: string }
  | { type: 'view'; view: { id: string; title: string; blocks: ViewBlock[] } }
  | { type: 'payment'; payment: { amount: string; currency: 'ETH' | 'USDT'; reference: string; description: string; expiresIn: number; card?: Card; declinedCard?: Card } }
  | { type: 'pong' };

export interface Manifest {
  version: string;
  commands: {
    id: string;
    title: string;
    description?: string;
    flow?: string;
    /** Free text after the command, sent as `text`. */
    argument?: { label: string; required?: boolean; maxLength?: number };
    /** Typed options given with the command, sent in `values`. */
    options?: { id: string; type: 'text' | 'number' | 'select' | 'date' | 'boolean'; label: string; required?: boolean; rules?: Record<string, unknown> }[];
  }[];
  flows: { id: string; mode: 'static' | 'dynamic'; views: { id: string; title: string; inputs: { id: string; type: 'text' | 'number' | 'select' | 'date' | 'boolean'; label: string; required?: boolean; rules?: Record<string, unknown> }[] }[] }[];
  scopes: Scope[];
  /** Cards a reply may name instead of sending one; texts may hold {{name}} placeholders. */
  templates?: { id: string; card: Card }[];
  sealing?: { publicKey: string };
}

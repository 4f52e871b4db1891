// An example app on the app SDK (packages/app-sdk): a pizza shop. `/order` opens a dynamic two-step
// form (size, then count and a note), posts the order as a card with a "Pay" button, and asks whoever
// taps it for the money; a completed payment is acknowledged. The tests run it over real HTTP against
// the service (test/integration/example-app.test.ts). Run it yourself with the service's address and
// its secrets in the environment; see docs/apps/overview.md.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { webhookHandler, type InvocationBody, type Manifest, type PaymentEventBody, type Reply } from '../packages/app-sdk/src/index.js';

export const pizzaManifest: Manifest = {
  version: '1.0.0',
  scopes: ['payments', 'conversation.ref'],
  commands: [
    { id: 'order', title: 'Order a pizza', flow: 'order-form' },
    { id: 'menu', title: 'Show the menu' },
  ],
  flows: [
    {
      id: 'order-form',
      mode: 'dynamic',
      views: [
        { id: 'size', title: 'Which size?', inputs: [{ id: 'size', type: 'select', label: 'Size', required: true, rules: { options: [{ value: 'small', label: 'Small' }, { value: 'large', label: 'Large' }] } }] },
        { id: 'details', title: 'How many?', inputs: [{ id: 'count', type: 'number', label: 'Pizzas', required: true, rules: { min: 1, max: 20 } }, { id: 'note', type: 'text', label: 'Note', rules: { maxLength: 100 } }] },
      ],
    },
  ],
};

const PRICE_CENTS: Record<string, number> = { small: 750, large: 1150 };
const money = (cents: number) => `${Math.floor(cents / 100)}.${String(cents % 100).padStart(2, '0')}`;

export interface PizzaApp {
  url: string;
  /** Payments the shop was told completed, by reference. */
  paid: Map<string, PaymentEventBody>;
  close(): Promise<void>;
}

export async function startPizzaApp(options: { secrets: () => string[] }): Promise<PizzaApp> {
  // Earlier answers of a form are the app's to keep, by invocation id.
  const forms = new Map<string, { size?: string }>();
  const paid = new Map<string, PaymentEventBody>();

  const onInvocation = (body: InvocationBody): Reply => {
    if (body.command === 'menu') {
      return { type: 'card', visibility: 'private', card: { blocks: [{ type: 'title', text: 'Menu' }, { type: 'fields', fields: Object.entries(PRICE_CENTS).map(([size, cents]) => ({ label: size, value: `${money(cents)} USDT` })) }] } };
    }
    if (body.action?.id === 'pay') {
      const { size, count } = body.action.payload as { size: string; count: number };
      return { type: 'payment', payment: { amount: money(PRICE_CENTS[size]! * count), currency: 'USDT', reference: `order-${body.id}`, description: `${count} × ${size} pizza`, expiresIn: 900 } };
    }
    if (body.command === 'order' && body.step === 'size') {
      const size = String(body.values?.size);
      forms.set(body.id, { size });
      return { type: 'view', view: { id: 'details', title: `How many ${size} pizzas?`, blocks: [{ type: 'input', id: 'count', default: 1 }, { type: 'input', id: 'note' }] } };
    }
    if (body.command === 'order' && body.step === 'details') {
      const size = forms.get(body.id)?.size ?? 'small';
      const count = Number(body.values?.count);
      forms.delete(body.id);
      return {
        type: 'card',
        card: {
          blocks: [
            { type: 'title', text: `Order: ${count} × ${size}` },
            { type: 'fields', fields: [{ label: 'Total', value: `${money(PRICE_CENTS[size]! * count)} USDT` }] },
            { type: 'actions', buttons: [{ id: 'pay', label: 'Pay', style: 'primary', kind: 'submit', payload: { size, count } }] },
          ],
        },
      };
    }
    return { type: 'error', userMessage: 'The shop does not know that yet', code: 'UNKNOWN_CALL' };
  };

  const server = http.createServer(
    webhookHandler({
      secrets: options.secrets,
      onInvocation,
      onPaymentEvent: (body) => {
        if (body.type !== 'payment.completed') return null;
        paid.set(body.payment.reference, body);
        return { type: 'ack', message: 'Paid: your pizza is on its way' };
      },
    }),
  );
  await new Promise<void>((resolve) => server.listen(Number(process.env.PORT ?? 0), '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/webhook`,
    paid,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

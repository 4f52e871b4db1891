import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { AppError } from '../../src/platform/errors.js';
import { TwilioSmsProvider } from '../../src/platform/sms/twilio.provider.js';
import { startTestApp, twilioAt } from '../helpers/app.js';

interface Received {
  method: string;
  url: string;
  authorization: string | undefined;
  contentType: string | undefined;
  form: URLSearchParams;
}

/** A local HTTP server answering like Twilio's Messages API: 201 on success, its error body on a bad number. */
describe('Twilio SMS adapter', () => {
  let server: http.Server;
  let base: string;
  const received: Received[] = [];
  before(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (chunk) => (body += chunk));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        received.push({ method: req.method ?? '', url: req.url ?? '', authorization: req.headers.authorization, contentType: req.headers['content-type'], form });
        res.setHeader('content-type', 'application/json');
        if (form.get('To') === '+15005550001') {
          res.statusCode = 400;
          res.end(JSON.stringify({ code: 21211, message: "The 'To' number +15005550001 is not a valid phone number.", status: 400 }));
        } else if (form.get('To') === '+15005550009') {
          res.statusCode = 503;
          res.end(JSON.stringify({ code: 20503, message: 'Service unavailable', status: 503 }));
        } else {
          res.statusCode = 201;
          res.end(JSON.stringify({ sid: 'SM0123456789abcdef0123456789abcdef', status: 'queued' }));
        }
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', () => resolve()));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const provider = () =>
    new TwilioSmsProvider({ accountSid: 'AC0123456789abcdef0123456789abcdef', authToken: 'auth-token-secret-value', from: '+15005550006', apiBase: base });

  it('posts the message form to the account\'s Messages resource with basic auth', async () => {
    await provider().send({ to: '+14155550123', text: '123456 is your code' });
    const last = received.at(-1)!;
    assert.equal(last.method, 'POST');
    assert.equal(last.url, '/2010-04-01/Accounts/AC0123456789abcdef0123456789abcdef/Messages.json');
    assert.equal(last.authorization, `Basic ${Buffer.from('AC0123456789abcdef0123456789abcdef:auth-token-secret-value').toString('base64')}`);
    assert.match(String(last.contentType), /^application\/x-www-form-urlencoded/);
    assert.equal(last.form.get('To'), '+14155550123');
    assert.equal(last.form.get('From'), '+15005550006');
    assert.equal(last.form.get('Body'), '123456 is your code');
  });

  it('turns Twilio\'s invalid-number error into a coded 400', async () => {
    await assert.rejects(provider().send({ to: '+15005550001', text: 'x' }), (error: unknown) => {
      assert.ok(error instanceof AppError);
      assert.equal(error.status, 400);
      assert.equal(error.code, 'PHONE_INVALID');
      return true;
    });
  });

  it('fails on a provider outage without leaking the credentials', async () => {
    await assert.rejects(provider().send({ to: '+15005550009', text: 'x' }), (error: unknown) => {
      assert.ok(error instanceof Error && !(error instanceof AppError));
      assert.match(error.message, /503/);
      assert.ok(!error.message.includes('auth-token-secret-value'));
      return true;
    });
  });
});

describe('sign-in when the SMS provider is down', () => {
  it('answers a coded 503, not a 500', async () => {
    // A provider pointed at a closed port: every send fails at the network level.
    const t = await startTestApp({
      ...twilioAt(),
    });
    try {
      const res = await t.app.inject({ method: 'POST', url: '/api/auth/code', payload: { phone: '+14155550123' } });
      assert.equal(res.statusCode, 503);
      assert.equal(res.json().code, 'SMS_UNAVAILABLE');
    } finally {
      await t.close();
    }
  });
});
